"""The probe contract's table (allocsites_lib/contract.py) against every
other place that spells out part of it: probes/rt.d (which
test_probe_contract.py holds against the header), the recorder's and the
parser's kind numbers, the event log and the C sweep's kinds, the end-to-
end counts, the native reader's field limit and the dlfilter's plain
event size. A new probe or argument that misses one of them fails here,
naming it. No perf, no compiler."""

import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from allocsites_lib import contract  # noqa: E402
from allocsites_lib.analyze import completeness  # noqa: E402
from allocsites_lib.read import eventlog, native, parse  # noqa: E402
from allocsites_lib.record import probedefs  # noqa: E402

# rt.d's C types on x86-64: (size, signed)
C_TYPES = {"void *": (8, False), "size_t": (8, False), "char *": (8, False),
           "unsigned int": (4, False), "unsigned long long": (8, False)}


def read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def d_probes():
    """[(name, [(arg name, C type)])] declared in probes/rt.d, in order."""
    text = re.sub(r"/\*.*?\*/", "", read("probes", "rt.d"), flags=re.S)
    out = []
    for m in re.finditer(r"probe\s+(\w+)\s*\(([^)]*)\)", text):
        args = []
        for decl in (a.strip() for a in m.group(2).split(",")):
            if decl:
                d = re.match(r"(.*?)\s*(\w+)$", decl)
                args.append((d.group(2), re.sub(r"\s*\*", " *",
                                                d.group(1)).strip()))
        out.append((m.group(1), args))
    return out


class ContractTable(unittest.TestCase):

    def test_rt_d_declares_the_table(self):
        want = [(p.name, [(a[0], a[1]) for a in p.args])
                for p in contract.PROBES]
        self.assertEqual(d_probes(), want)
        for p in contract.PROBES:
            for name, ctype, size, signed in p.args:
                with self.subTest(probe=p.name, arg=name):
                    self.assertEqual(C_TYPES[ctype], (size, signed))

    def test_plain_kinds_are_one_numbering(self):
        self.assertEqual(probedefs.KINDS, contract.PLAIN_KINDS)
        self.assertEqual(parse.PLAIN_KINDS, contract.PLAIN_NAMES)
        codes = list(contract.PLAIN_KINDS.values())
        self.assertEqual(len(codes), len(set(codes)), "a kind number twice")
        # every probe without a call graph is in the plain event
        for p in contract.PROBES:
            if p.name not in ("alloc", "sample") + contract.DEFINING:
                self.assertIn(p.name, contract.PLAIN_KINDS)

    def test_event_names_parse(self):
        for name in contract.FIRING + ("plain",):
            with self.subTest(name=name):
                self.assertEqual(parse.event_kind("sdt_rt:%s_12" % name),
                                 name)
        self.assertIsNone(parse.event_kind("sdt_rt:phase_track"))

    def test_the_event_log_and_the_sweep_have_every_kind(self):
        logged = set(contract.FIRING) - set(contract.DEFINING)
        self.assertEqual(set(eventlog.KINDS), logged)
        # scripts/sweep/sweep.h numbers the kinds as eventlog.KINDS does
        enum = re.search(r"enum\s*\{\s*(K_ALLOC[^}]*)\}",
                         read("scripts", "sweep", "sweep.h")).group(1)
        names = [n.strip()[2:].lower() for n in enum.split(",")
                 if n.strip() and n.strip() != "K_COUNT"]
        self.assertEqual(tuple(names), eventlog.KINDS)

    def test_the_native_tally_has_the_kinds_and_the_plain_numbering(self):
        # scripts/reader/tally.c: the log's kinds in eventlog's order, the
        # plain event's immediates as the contract numbers them, and
        # completeness's COUNTED_AS
        src = read("scripts", "reader", "tally.c")
        names = re.search(r"kind_names\[NKINDS\] = \{([^}]*)\}", src)
        self.assertEqual(tuple(re.findall(r'"(\w+)"', names.group(1))),
                         eventlog.KINDS)
        plain = re.search(r"plain_kinds\[\] = \{(.*?)\};", src, re.S)
        table = {int(n): k.lower() for n, k in re.findall(
            r"\{ (\d+), K_(\w+) \}", plain.group(1))}
        self.assertEqual(table, contract.PLAIN_NAMES)
        counted = re.search(r"counted_as\[NKINDS\] = \{([^}]*)\}", src)
        as_named = [k.strip()[2:].lower().replace("phase_begin", "phase")
                    for k in counted.group(1).split(",") if k.strip()]
        self.assertEqual(as_named, [completeness.COUNTED_AS.get(k, k)
                                    for k in eventlog.KINDS])

    def test_exit_counts_every_kind_in_its_argument_order(self):
        exit_args = [a[0] for a in contract.BY_NAME["exit"].args]
        self.assertEqual(exit_args[-1], "untracked")
        self.assertEqual(tuple(a[:-1] for a in exit_args[:-1]),
                         contract.EXIT_COUNTS)
        self.assertEqual(completeness.KINDS, contract.EXIT_COUNTS)
        counted = {completeness.COUNTED_AS.get(k, k)
                   for k in contract.FIRING
                   if k not in contract.DEFINING + ("exit",)}
        self.assertEqual(counted, set(contract.EXIT_COUNTS))

    def test_the_readers_hold_every_argument(self):
        most = max(len(p.args) for p in contract.PROBES)
        self.assertEqual(len(contract.PLAIN_FIELDS), most)
        m = re.search(r"#define MAX_FIELDS (\d+)",
                      read("scripts", "reader", "reader.h"))
        self.assertEqual(int(m.group(1)), native.MAX_FIELDS)
        # the plain event's fields: __probe_ip, kind, a..h
        self.assertGreaterEqual(native.MAX_FIELDS,
                                2 + len(contract.PLAIN_FIELDS))
        # the dlfilter's raw size: 8 common bytes, the probe ip, the kind
        # byte, a u64 a field
        m = re.search(r"#define PLAIN_RAW_SIZE (\d+)",
                      read("scripts", "dlfilter", "allocsites_mailbox.c"))
        self.assertEqual(int(m.group(1)),
                         8 + 8 + 1 + 8 * len(contract.PLAIN_FIELDS))


if __name__ == "__main__":
    unittest.main()
