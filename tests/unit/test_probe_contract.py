"""The probe contract: include/rt_probes.h against probes/rt.d, compile
cleanliness, and the cost when off. Needs gcc, g++ and dtrace
(systemtap-sdt-dev); no perf."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from allocsites_lib.read import elf  # noqa: E402

INCLUDE = os.path.join(ROOT, "include")
RT_D = os.path.join(ROOT, "probes", "rt.d")

# A use of every probe, with arguments of exactly the .d types.
USE = r"""
#include <stddef.h>
%(include)s
void use(void *ptr, size_t size, unsigned int tag);
void use(void *ptr, size_t size, unsigned int tag)
{
    unsigned long long weight = size * 3;
    RT_ALLOC(ptr, size, tag);
    RT_FREE(ptr, size, tag);
    RT_RELEASE(ptr, size);
    RT_COMMIT(ptr, size);
    RT_DECOMMIT(ptr, size);
    RT_PHASE_BEGIN(tag);
    RT_PHASE_END(tag);
    %(sample)s
    (void)weight;
}
void use_guest(void *ptr, size_t size, unsigned int tag,
               unsigned long long weight, char *source, char *function);
void use_guest(void *ptr, size_t size, unsigned int tag,
               unsigned long long weight, char *source, char *function)
{
    %(guest)s
}
static char block[24];
int main(void) { use(block, sizeof block, 3); return 0; }
"""

ARG_RE = re.compile(r"(-?)(\d+)@")

PROBES = ("alloc", "free", "sample", "sample_free", "release", "commit",
          "decommit", "phase_begin", "phase_end", "phase_track", "exit",
          "guest")
# The header's guest probes, in a runtime's calls
GUEST_H = ("RT_ALLOC_GUEST(ptr, size, tag, weight);"
           " RT_GUEST(weight, weight, weight, source, function);")


def every_probe(include='#include "rt_probes.h"'):
    """USE with every probe of the header: RT_REALLOC and RT_EXIT besides
    USE's own, and the guest probes; include: what comes first."""
    return USE % {"include": include,
                  "sample": "RT_REALLOC(ptr, ptr, size, tag); RT_EXIT();",
                  "guest": GUEST_H}


def signature(path):
    """{(provider, name): [(size, signed), ...]} from a binary's notes."""
    image = elf.open_elf(path)
    out = {}
    for provider, name, _pc, semaphore, args in elf.stapsdt_probes(image):
        out[(provider, name)] = ([(int(m.group(2)), m.group(1) == "-")
                                  for m in ARG_RE.finditer(args)],
                                 semaphore != 0)
    return out


def d_probes():
    """{name: [C type, ...]} declared in probes/rt.d."""
    with open(RT_D) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    return {m.group(1): [a.strip() for a in m.group(2).split(",")
                         if a.strip()]
            for m in re.finditer(r"probe\s+(\w+)\s*\(([^)]*)\)", text)}


class _Renamed:
    """An ELF image whose .rt_phases reads as .rt_tags."""
    def __init__(self, image):
        self.image = image

    def section(self, name):
        return self.image.section(".rt_phases" if name == ".rt_tags" else name)


class ProbeContract(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def cc(self, source, out, *flags, compiler="gcc", link=True):
        src = os.path.join(self.tmp, out + (".cc" if compiler.endswith("++") else ".c"))
        with open(src, "w") as f:
            f.write(source)
        path = os.path.join(self.tmp, out)
        cmd = [compiler, "-O2", "-g", "-I" + INCLUDE, "-I" + self.tmp] + \
            list(flags) + ([] if link else ["-c"]) + [src, "-o", path]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(proc.stdout, "", "compiler printed warnings")
        return path

    def test_header_and_d_file_declare_the_same_probes(self):
        # dtrace's generated header, with its semaphores from dtrace -G.
        gen = os.path.join(self.tmp, "rt_gen.h")
        sem = os.path.join(self.tmp, "rt_sem.o")
        # --no-pyparsing: see probes/rt.d (the name "free").
        subprocess.run(["dtrace", "--no-pyparsing", "-h", "-s", RT_D, "-o", gen],
                       check=True)
        subprocess.run(["dtrace", "--no-pyparsing", "-G", "-s", RT_D, "-o", sem],
                       check=True)
        # rt_probes.h fires rt:sample from RT_ALLOC, rt:sample_free from
        # RT_FREE and rt:exit from a destructor; dtrace's header has a
        # macro of its own for each.
        from_d = self.cc(USE.replace("RT_ALLOC(ptr, size, tag)",
                                     "RT_ALLOC(ptr, size, tag, 0)") % {
                                "include": '#include "rt_gen.h"',
                                "guest": "RT_ALLOC(ptr, size, tag, weight);"
                                         " RT_GUEST(weight, weight, weight,"
                                         " source, function);",
                                "sample": "RT_SAMPLE(ptr, size, tag, weight, weight, weight, weight);"
                                          " RT_PHASE_TRACK();"
                                          " RT_SAMPLE_FREE(ptr, weight);"
                                          " RT_EXIT(weight, weight, weight, weight,"
                                          " weight, weight, weight, weight);"},
                         "from_d", sem)
        from_h = self.cc(USE % {"include": '#include "rt_probes.h"',
                                "sample": "", "guest": GUEST_H}, "from_h",
                         "-std=c99", "-Wall", "-Wextra", "-pedantic")
        want = signature(from_d)
        self.assertEqual(set(want), {("rt", n) for n in PROBES})
        self.assertEqual(signature(from_h), want)
        # And the .d file declares what the header documents.
        self.assertEqual(d_probes(), {
            "alloc": ["void *ptr", "size_t size", "unsigned int tag",
                      "unsigned long long guest"],
            "free": ["void *ptr", "size_t size", "unsigned int tag"],
            "sample": ["void *ptr", "size_t size", "unsigned int tag",
                       "unsigned long long weight",
                       "unsigned long long rate",
                       "unsigned long long phase",
                       "unsigned long long guest"],
            "guest": ["unsigned long long id", "unsigned long long parent",
                      "unsigned long long line", "char *source",
                      "char *function"],
            "sample_free": ["void *ptr", "unsigned long long weight"],
            "release": ["void *base", "size_t len"],
            "commit": ["void *ptr", "size_t size"],
            "decommit": ["void *ptr", "size_t size"],
            "phase_begin": ["unsigned int id"],
            "phase_end": ["unsigned int id"],
            "phase_track": [],
            "exit": ["unsigned long long allocs", "unsigned long long frees",
                     "unsigned long long samples",
                     "unsigned long long sample_frees",
                     "unsigned long long releases",
                     "unsigned long long commits",
                     "unsigned long long phases",
                     "unsigned long long untracked"]})

    def test_the_readmes_three_calls_compile_as_c_and_cpp(self):
        # The README's annotation (issue 22: the three calls, complete and
        # correct in under 15 lines), with the allocator's own helpers
        # declared.
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        part = readme[readme.index("## Annotate your allocator"):]
        start = part.index("```c\n") + 5
        snippet = part[start:part.index("\n```", start)]
        self.assertLessEqual(len(snippet.splitlines()), 15)
        for call in ("RT_ALLOC(", "RT_FREE(", "RT_REALLOC("):
            self.assertIn(call, snippet)
        src = ("#include <stddef.h>\nvoid *carve(size_t);\n"
               "void release(void *);\nvoid *resize(void *, size_t);\n"
               + snippet + "\n")
        strict = ["-Wall", "-Wextra", "-pedantic", "-Werror"]
        self.cc(src, "readme_c", "-std=c99", *strict, link=False)
        self.cc(src, "readme_cxx", "-std=c++11", *strict, compiler="g++",
                link=False)

    def test_readelf_and_bpftrace_see_every_probe_in_c_and_cpp(self):
        # Other USDT consumers read the notes as sys/sdt.h writes them:
        # readelf -n names provider, probe and a semaphore for each (and
        # bpftrace lists them where it is installed), for the new forms
        # (RT_FREE(p), RT_REALLOC) as for the first ones.
        use = USE % {"include": '#include "rt_probes.h"',
                     "sample": "RT_FREE(ptr); RT_REALLOC(ptr, ptr, size, tag);",
                     "guest": GUEST_H}
        for name, compiler, std in (("notes_c", "gcc", "-std=c99"),
                                    ("notes_cxx", "g++", "-std=c++11")):
            prog = self.cc(use, name, std, compiler=compiler)
            out = subprocess.run(["readelf", "-n", prog], check=True,
                                 stdout=subprocess.PIPE,
                                 universal_newlines=True).stdout
            notes = re.findall(r"Provider: (\S+)\s+Name: (\S+)\s+"
                               r"Location: (0x[0-9a-f]+), Base: 0x[0-9a-f]+, "
                               r"Semaphore: (0x[0-9a-f]+)", out)
            with self.subTest(compiler=compiler):
                self.assertEqual({(p, n) for p, n, _, _ in notes},
                                 {("rt", n) for n in PROBES})
                for provider, probe, _, sem in notes:
                    self.assertNotEqual(int(sem, 16), 0, probe)
                if shutil.which("bpftrace"):
                    listed = subprocess.run(
                        ["bpftrace", "-l", "usdt:%s:rt:*" % prog],
                        stdout=subprocess.PIPE, universal_newlines=True).stdout
                    self.assertEqual(
                        {line.rsplit(":", 1)[-1] for line in listed.split()},
                        set(PROBES))

    def test_arguments_are_registers(self):
        prog = self.cc(USE % {"include": '#include "rt_probes.h"', "sample": "",
                              "guest": GUEST_H}, "regs")
        image = elf.open_elf(prog)
        for _, name, _, _, args in elf.stapsdt_probes(image):
            for operand in args.split():
                self.assertRegex(operand, r"^-?\d+@%[a-z0-9]+$",
                                 "%s: %s is not a register" % (name, operand))

    def test_compiles_clean_in_c_and_cpp(self):
        use = USE % {"include": '#include "rt_probes.h"', "sample": "",
                              "guest": GUEST_H}
        strict = ["-Wall", "-Wextra", "-pedantic", "-Werror"]
        for std in ("-std=c99", "-std=c11"):
            self.cc(use, "c" + std[-2:], std, *strict, link=False)
        self.cc(use, "cxx", "-std=c++11", *strict, compiler="g++", link=False)
        if shutil.which("clang"):
            self.cc(use, "clang", "-std=c99", *strict, compiler="clang",
                    link=False)

    # Warnings projects turn on beyond -Wall -Wextra (PostgreSQL builds
    # with -Wmissing-prototypes; clang's -Wmissing-variable-declarations
    # and C++'s -Wmissing-declarations are the same check; the rest are
    # common in strict builds). The header's weak definitions are each
    # declared first, its null pointers are nullptr in C++11. Built with
    # RT_PROBES_WARNINGS: the header's own code checked as the user's
    # (by default it is a system header to the compiler, which reports
    # nothing of it: test_users_strictest_flags_report_nothing). Not
    # covered here: -Wold-style-cast (the probe macros' casts take a
    # pointer or an integer alike).
    STRICT_C = ["-Wmissing-prototypes", "-Wmissing-declarations",
                "-Wstrict-prototypes", "-Wold-style-definition",
                "-Wdeclaration-after-statement", "-Wshadow", "-Wvla",
                "-Wpointer-arith", "-Wundef", "-Wcast-qual", "-Wcast-align",
                "-Wredundant-decls", "-Wconversion", "-Wsign-conversion",
                "-Wformat=2", "-Wbad-function-cast", "-Wnested-externs",
                "-Wwrite-strings", "-Wcast-function-type"]
    STRICT_CXX = ["-Wmissing-declarations", "-Wshadow", "-Wundef",
                  "-Wcast-qual", "-Wredundant-decls", "-Wconversion",
                  "-Wsign-conversion", "-Wzero-as-null-pointer-constant"]

    def test_compiles_clean_under_projects_strict_warnings(self):
        use = every_probe()
        base = ["-Wall", "-Wextra", "-pedantic", "-Werror"]
        builds = [("gcc", "-std=c99", self.STRICT_C),
                  ("gcc", "-std=c11", self.STRICT_C),
                  ("g++", "-std=c++11", self.STRICT_CXX),
                  ("g++", "-std=c++20", self.STRICT_CXX)]
        if shutil.which("clang"):
            builds += [("clang", "-std=c99", self.STRICT_C +
                        ["-Wmissing-variable-declarations"]),
                       ("clang++", "-std=c++17", self.STRICT_CXX +
                        ["-Wmissing-variable-declarations"])]
        for i, (compiler, std, flags) in enumerate(builds):
            with self.subTest(compiler=compiler, std=std):
                self.cc(use, "strict%d" % i, std, "-DRT_PROBES_WARNINGS",
                        *base, *flags, compiler=compiler, link=False)

    # What users' builds add that the header's own code cannot satisfy
    # (C casts, `long long` in C89 and C++98, struct padding) or that
    # reports everything (clang's -Weverything), and the oldest
    # standards GCC and clang compile: the header tells the compiler it
    # is a system header, which reports nothing of its code or its
    # macros' bodies (the arguments stay the user's code).
    USERS_CXX = ["-Wold-style-cast", "-Wuseless-cast"]
    # clang's -Weverything, less what only concerns the test's own code
    # or what no project enables with it (C++98 compatibility of C++17)
    EVERYTHING = ["-Weverything", "-Wno-c++98-compat",
                  "-Wno-c++98-compat-pedantic", "-Wno-missing-prototypes",
                  "-Wno-unused-macros"]

    def test_users_strictest_flags_report_nothing(self):
        use = every_probe()
        # C89 and C++98 have no `long long` of their own: the test's
        # variables are size_t there (the probes' casts make the notes
        # the same)
        old = use.replace("unsigned long long", "size_t")
        base = ["-Wall", "-Wextra", "-pedantic", "-Werror"]
        builds = [("gcc", "-std=c89", old, self.STRICT_C),
                  ("gcc", "-std=gnu89", old, self.STRICT_C),
                  ("g++", "-std=c++98", old, self.STRICT_CXX +
                   self.USERS_CXX),
                  ("g++", "-std=c++17", use, self.STRICT_CXX +
                   self.USERS_CXX)]
        if shutil.which("clang"):
            # C89's 509-character string literals: an asm note is longer
            builds += [("clang", "-std=c89", old, self.EVERYTHING +
                        ["-Wno-overlength-strings"]),
                       ("clang", "-std=c11", use, self.EVERYTHING),
                       ("clang++", "-std=c++98", old, self.EVERYTHING),
                       ("clang++", "-std=c++17", use, self.EVERYTHING)]
        want = signature(self.cc(use, "c99", "-std=c99"))
        for i, (compiler, std, src, flags) in enumerate(builds):
            with self.subTest(compiler=compiler, std=std):
                prog = self.cc(src, "user%d" % i, std, *base, *flags,
                               compiler=compiler)
                self.assertEqual(signature(prog), want)

    # words of the header's asm statements a program may have macros of:
    # an operand's name in brackets is replaced as any word
    OPERANDS = ("p", "s", "t", "g", "i", "pa", "l", "f", "w", "r", "ph",
                "a", "b", "sf", "c", "u", "name", "sname", "args")

    # the system headers rt_probes.h includes, first, as a program that
    # defines such macros has them (C++'s <cstdlib> cannot take a macro
    # named free or exit)
    SYSTEM_HEADERS = ("#include <stdlib.h>\n#include <pthread.h>\n"
                      "#include <sys/mman.h>\n#include <sys/auxv.h>\n")

    def assertSameNotes(self, prelude, c_std, *flags):
        """every_probe() after prelude (its macros, then the header) has
        the notes of every_probe() alone, in C (c_std) and C++11, built
        with flags; returns the notes of each build."""
        notes = []
        for compiler, std in (("gcc", c_std), ("g++", "-std=c++11")):
            with self.subTest(compiler=compiler):
                want = signature(self.cc(every_probe(), "plain_" + compiler,
                                         std, compiler=compiler))
                got = signature(self.cc(every_probe(prelude),
                                        "macros_" + compiler, std, *flags,
                                        compiler=compiler))
                self.assertEqual(got, want)
                notes.append(got)
        return notes

    def test_probe_names_the_program_defines_as_macros(self):
        # gawk 5.2 says `#define free pma_free` before its allocator's
        # code: the word passed through the header's macros became
        # pma_free, the notes named rt_pma_free_semaphore and the link
        # failed. Every probe's name defined as a macro, in C and C++:
        # the same notes as without.
        names = ("alloc", "free", "sample", "sample_free", "release",
                 "commit", "decommit", "phase_begin", "phase_end",
                 "phase_track", "exit", "guest")
        # the test's own code says none of these words
        for word in names + self.OPERANDS:
            self.assertNotRegex(every_probe(""), r"\b%s\b" % word)
        macros = self.SYSTEM_HEADERS + "".join(
            "#define %s my_%s\n" % (n, n) for n in names + self.OPERANDS)
        for got in self.assertSameNotes(macros + '#include "rt_probes.h"',
                                        "-std=c99"):
            self.assertEqual({n for _, n in got}, set(names))

    def test_attribute_macros_a_program_defines(self):
        # the Linux kernel's compiler.h style, which programs copy:
        # `#define noinline __attribute__((noinline))` made the header's
        # __attribute__((..., noinline, ...)) a syntax error
        attrs = (self.SYSTEM_HEADERS +
                 "#define noinline __attribute__((noinline))\n"
                 "#define always_inline inline __attribute__((always_inline))\n"
                 "#define used __attribute__((used))\n"
                 "#define weak __attribute__((weak))\n"
                 "#define cold __attribute__((cold))\n"
                 "#define retain __attribute__((retain))\n"
                 "#define constructor __attribute__((constructor))\n"
                 "#define section(s) __attribute__((section(s)))\n"
                 "#define aligned(n) __attribute__((aligned(n)))\n"
                 "#define visibility(v) __attribute__((visibility(v)))\n"
                 "#define destructor(p) __attribute__((destructor(p)))\n"
                 "#define tls_model(m) __attribute__((tls_model(m)))\n")
        self.assertSameNotes(attrs + '#include "rt_probes.h"\n'
                             'RT_TAG_NAME(3, "ast");\n'
                             'RT_PHASE_NAME(1, "parse");\n',
                             "-std=gnu99", "-Wall", "-Wextra", "-Werror")

    def test_users_strictest_flags_would_see_the_header(self):
        # the test above can fail: with RT_PROBES_WARNINGS the same
        # flags do report the header's code (its C casts, in C++)
        use = USE % {"include": '#include "rt_probes.h"', "sample": "",
                     "guest": GUEST_H}
        with self.assertRaisesRegex(AssertionError, "old-style-cast"):
            self.cc(use, "shown", "-std=c++17", "-DRT_PROBES_WARNINGS",
                    "-Werror", *self.USERS_CXX, compiler="g++",
                    link=False)

    def test_include_order_changes_no_probes(self):
        # sys/sdt.h decides at its first #include whether probes have
        # semaphores; rt_probes.h must keep its own semaphores and leave
        # another provider's probes as that provider asked, in either
        # order, in C and C++.
        compilers = [("gcc", "c99"), ("g++", "c++11")]
        if shutil.which("clang"):
            compilers.append(("clang", "c99"))
        for compiler, std in compilers:
            for sdt_first in (True, False):
                for other_sem in (True, False):
                    with self.subTest(compiler=compiler, sdt_first=sdt_first,
                                      other_sem=other_sem):
                        sdt = ("#define _SDT_HAS_SEMAPHORES 1\n"
                               if other_sem else "") + "#include <sys/sdt.h>\n"
                        rt = '#include "rt_probes.h"\n'
                        src = (sdt + rt if sdt_first else rt + sdt) + (
                            "__extension__ unsigned short myapp_tick_semaphore"
                            " __attribute__((section(\".probes\")));\n"
                            if other_sem else "") + (
                            "int main(int argc, char **argv)\n"
                            "{\n"
                            "    RT_ALLOC(argv, (size_t)argc, 1);\n"
                            "    RT_FREE(argv, (size_t)argc, 1);\n"
                            "    STAP_PROBE1(myapp, tick, argc);\n"
                            "    return 0;\n"
                            "}\n")
                        prog = self.cc(src, "order", "-std=" + std, "-Wall",
                                       "-Wextra", "-Werror",
                                       compiler=compiler)
                        sig = signature(prog)
                        for name in ("alloc", "free", "sample",
                                     "sample_free", "exit"):
                            self.assertTrue(sig[("rt", name)][1],
                                            "rt:%s has no semaphore" % name)
                        self.assertEqual(sig[("myapp", "tick")][1], other_sem)

    def test_disabled_build_has_no_probes_and_no_code(self):
        prog = self.cc(USE % {"include": '#include "rt_probes.h"', "sample": "",
                              "guest": GUEST_H}, "off",
                       "-DRT_PROBES_DISABLE", "-Wall", "-Wextra", "-Werror")
        self.assertEqual(elf.stapsdt_probes(elf.open_elf(prog)), [])
        self.assertNotIn(".probes", elf.open_elf(prog).sections)

    OFF_PATH_SITE = r"""
#include "rt_probes.h"
#ifndef SITE_PROBE
#define SITE_PROBE RT_ALLOC
#endif
#ifndef SITE_CALL
#define SITE_CALL SITE_PROBE(p, n * 3 + 1, (unsigned)(n >> 4))
#endif
void *get(unsigned long n);
void *site(unsigned long n);
void *site(unsigned long n)
{
    void *p = get(n);
    SITE_CALL;
    get(0);
    return p;
}
"""

    def off_path(self, *flags):
        """The instructions the probe adds between the two calls when off
        (register-to-register moves that keep p alive are not counted)."""
        obj = self.cc(self.OFF_PATH_SITE, "site.o", "-Wall", *flags,
                      link=False)
        asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj],
                             stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout
        body = asm.split("<site>:")[1]
        insns = [l.split("\t", 1)[1].strip() for l in body.splitlines()
                 if re.match(r"^\s+[0-9a-f]+:\t", l)]
        calls = [i for i, s in enumerate(insns) if s.startswith("call")]
        between = insns[calls[0] + 1:calls[1]]
        return [s for s in between
                if not re.match(r"^mov\s+%\w+,%\w+$", s) and
                not re.match(r"^xor\s+%(\w+),%\1$", s)]

    def test_off_path_is_two_instructions(self):
        # RT_ALLOC tests rt:alloc's and rt:sample's semaphores as one word.
        added = self.off_path()
        self.assertEqual(len(added), 2, added)
        self.assertRegex(added[0], r"^cmpl\s+\$0x0,0x0\(%rip\)")
        self.assertRegex(added[1], r"^jne\s")
        # RT_FREE tests rt:free's and rt:sample_free's as one word.
        added = self.off_path("-DSITE_PROBE=RT_FREE")
        self.assertEqual(len(added), 2, added)
        self.assertRegex(added[0], r"^cmpl\s+\$0x0,0x0\(%rip\)")
        # RT_RELEASE tests four semaphores as one 8-byte word, the phase
        # markers three (begin, track, end), the others their own; none
        # evaluates its arguments when off: RT_ALLOC_GUEST's guest
        # location (a call into the runtime) included.
        for call, cmp in (("RT_ALLOC_GUEST(p, n, 1, (unsigned long long)"
                           "get(n * 7))", "cmpl"),
                          ("RT_GUEST(n, n + 1, n + 2, (char *)get(n),"
                           " (char *)get(n + 1))", "cmpw"),
                          ("RT_RELEASE(p, n * 3 + 1)", "cmpq"),
                          ("RT_COMMIT(p, n * 3 + 1)", "cmpw"),
                          ("RT_DECOMMIT(p, n * 3 + 1)", "cmpw"),
                          ("RT_PHASE_BEGIN(n >> 4)", "cmpq"),
                          ("RT_PHASE_END(n >> 4)", "cmpq")):
            with self.subTest(call=call):
                added = self.off_path("-DSITE_CALL=" + call)
                self.assertEqual(len(added), 2, added)
                self.assertRegex(added[0], r"^%s\s+\$0x0,0x0\(%%rip\)" % cmp)
                self.assertRegex(added[1], r"^jne\s")

    def test_plain_c_semaphore_test_costs_three(self):
        # Why the header uses asm goto on x86-64: GCC loads the volatile
        # semaphore into a register before testing it.
        added = self.off_path("-DRT_PROBES_NO_ASM_GOTO")
        self.assertEqual(len(added), 3, added)
        self.assertRegex(added[0], r"^mov\s+0x0\(%rip\)")

    def test_semaphores_are_hidden_adjacent_and_in_probes_section(self):
        prog = self.cc(USE % {"include": '#include "rt_probes.h"',
                              "sample": "", "guest": GUEST_H}, "sem")
        syms = subprocess.run(["readelf", "-sW", prog], stdout=subprocess.PIPE,
                              universal_newlines=True, check=True).stdout
        found = {}
        for line in syms.splitlines():
            parts = line.split()
            if len(parts) >= 8 and parts[7].endswith("_semaphore"):
                found[parts[7]] = (int(parts[1], 16), parts[5])
        self.assertEqual(set(found), {"rt_%s_semaphore" % n for n in PROBES})
        self.assertEqual({v[1] for v in found.values()}, {"HIDDEN"})
        image = elf.open_elf(prog)
        start = image.section_address(".probes")
        self.assertEqual(start % 8, 0)
        offsets = {name[3:-10]: addr - start for name, (addr, _) in found.items()}
        # The layout the words rely on (rt_probes.h): alloc+sample is the
        # u32 RT_ALLOC tests, free+sample_free the u32 RT_FREE tests,
        # free..decommit the u64 RT_RELEASE tests (it holds release and
        # sample_free), each word aligned to its size.
        self.assertEqual(offsets, {
            "alloc": 0, "sample": 2, "exit": 4, "commit": 6,
            "free": 8, "sample_free": 10, "release": 12, "decommit": 14,
            "phase_begin": 16, "phase_track": 18, "phase_end": 20,
            "guest": 24})
        sizes = {}
        for line in syms.splitlines():
            parts = line.split()
            if len(parts) >= 8 and parts[7].startswith("rt_") and \
                    "semaphore" in parts[7]:
                sizes[parts[7]] = (int(parts[1], 16) - start, int(parts[2]))
        self.assertEqual(sizes["rt__alloc_semaphores"], (0, 4))
        self.assertEqual(sizes["rt__free_semaphores"], (8, 4))
        self.assertEqual(sizes["rt__release_semaphores"], (8, 8))
        self.assertEqual(sizes["rt__phase_semaphores"], (16, 8))
        # Each probe's semaphore is its own 2-byte symbol (perf's
        # ref_ctr_offset is per semaphore).
        for n in PROBES:
            self.assertEqual(sizes["rt_%s_semaphore" % n][1], 2, n)

    def test_header_in_several_units_with_and_without_lto(self):
        # Two units use the probes, each including the header. The linker
        # keeps one semaphore block (a COMDAT group); under -flto the
        # compiler writes every unit's top-level asm into one assembler
        # file, where the block's second copy was "symbol already
        # defined" until the header guarded it (.ifndef). Each probe's
        # note must then name its semaphore in that one block.
        other = USE.replace("void use(", "void use2(").replace(
            "use(void", "use2(void").replace("use_guest", "use_guest2").replace(
            "int main(void) { use(block, sizeof block, 3); return 0; }",
            "")
        main = USE % {"include": '#include "rt_probes.h"', "sample": "",
                      "guest": GUEST_H}
        main = main.replace(
            "static char block[24];",
            "void use2(void *ptr, size_t size, unsigned int tag);\n"
            "static char block[24];").replace(
            "return 0; }", "use2(block, 8, 1); return 0; }")
        with open(os.path.join(self.tmp, "other.c"), "w") as f:
            f.write(other % {"include": '#include "rt_probes.h"',
                             "sample": "", "guest": GUEST_H})
        for compiler, flags in (("gcc", []), ("gcc", ["-flto"]),
                                ("gcc", ["-flto=2", "-flto-partition=max"]),
                                ("clang", []), ("clang", ["-flto"]),
                                ("g++", ["-flto"]),
                                # the other linkers: COMDAT groups and
                                # .probes kept as GNU ld keeps them
                                ("gcc", ["-fuse-ld=gold"]),
                                ("clang", ["-fuse-ld=lld"]),
                                ("clang", ["-flto", "-fuse-ld=lld"])):
            with self.subTest(compiler=compiler, flags=flags):
                prog = self.cc(main, "units", os.path.join(self.tmp, "other.c"),
                               *flags, compiler=compiler)
                image = elf.open_elf(prog)
                start = image.section_address(".probes")
                self.assertEqual(len(image.section(".probes")), 32)
                syms = subprocess.run(["readelf", "-sW", prog],
                                      stdout=subprocess.PIPE,
                                      universal_newlines=True,
                                      check=True).stdout
                sem = {}
                for line in syms.splitlines():
                    parts = line.split()
                    if len(parts) >= 8 and parts[7].endswith("_semaphore"):
                        sem.setdefault(parts[7], set()).add(
                            int(parts[1], 16))
                notes = elf.stapsdt_probes(image)
                # (under -flto, use_guest is never called: dropped)
                self.assertTrue({"alloc", "free"} <=
                                {n for _, n, _, _, _ in notes})
                for _, name, _, semaphore, _ in notes:
                    self.assertEqual(sem["rt_%s_semaphore" % name],
                                     {semaphore}, name)
                    self.assertTrue(start <= semaphore < start + 32, name)

    def test_phase_names_are_records_like_tag_names(self):
        src = ('#include "rt_probes.h"\n'
               'RT_PHASE_NAME(1, "lex");\n'
               'RT_PHASE_NAME(4294967295u, "a_phase_name_of_17");\n'
               'RT_TAG_NAME(2, "tokens");\n'
               "int main(void) { RT_PHASE_BEGIN(1); RT_PHASE_END(1); return 0; }\n")
        for flags in ((), ("-DRT_PROBES_DISABLE",)):
            with self.subTest(flags=flags):
                prog = self.cc(src, "phases", "-std=c99", "-Wall", "-Wextra",
                               "-pedantic", "-Werror", *flags)
                image = elf.open_elf(prog)
                blob = image.section(".rt_phases")
                # Same layout as .rt_tags, so the same reader reads it.
                self.assertEqual(elf.tag_names(_Renamed(image)),
                                 {1: "lex", 4294967295: "a_phase_name_of_17"})
                self.assertEqual(len(blob) % 4, 0)
                self.assertEqual(len(blob), (8 + 4) + (8 + 20))


if __name__ == "__main__":
    unittest.main()
