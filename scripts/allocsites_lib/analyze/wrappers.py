"""The allocator wrappers: declared by RT_SKIP, or suggested for --skip.

The wrappers around the allocator: those the binaries declare (RT_SKIP)
and those the folded profile suggests (a --skip line to paste)."""

import collections
import re

from ..read.elf import skip_patterns


def skip_regex(patterns):
    """--skip's patterns (a list, or None) as one regex, or None."""
    return "|".join("(?:%s)" % s for s in patterns) if patterns else None


def declared_skips(tally, symbolizer):
    """[(regex, dso)] the recorded binaries declare with RT_SKIP, each
    regex once, in DSO order; unusable ones are left out (warned)."""
    return declared_patterns(tally, symbolizer, ".rt_skip", "RT_SKIP")


def declared_patterns(tally, symbolizer, section, macro):
    """[(regex, dso)] of the records of section (laid out as .rt_skip)
    in the recorded binaries, each regex once, in DSO order; one that is
    not a valid regular expression is left out, with a warning naming
    macro."""
    out, seen = [], set()
    for dso in sorted(tally.dsos()):
        image = symbolizer.elf(dso)
        if image is None:
            continue
        for regex in skip_patterns(image, section):
            if regex in seen:
                continue
            seen.add(regex)
            try:
                re.compile(regex)
            except (re.error, OverflowError, RecursionError):
                # as cli/options.py's --skip: too large, too deep
                symbolizer.warn(
                    ("badregex", macro, regex, dso),
                    "%s(%r) in %s is not a valid regular expression: "
                    "ignored" % (macro, regex, dso))
                continue
            out.append((regex, dso))
    return out


# A site with at least this share of all bytes, called from at least this
# many functions, gets the --skip suggestion.
WRAPPER_SHARE = 0.2


WRAPPER_CALLERS = 8


WRAPPER_CHAIN = 32   # at most this many single-caller wrappers deep


# Rust's allocation path, from a #[global_allocator]'s GlobalAlloc impl
# out to the Vec, Box or String that asked (docs/probes.md, "A Rust
# program: a global allocator through a C shim"). It fans out a few
# callers at a time (alloc, realloc, alloc_zeroed; RawVec's growth), so
# wrapper_suspects' chain of single callers does not find it.
RUST_GLOBAL_ALLOC = re.compile(
    r" as core::alloc::global::GlobalAlloc>::|^__rustc::__rust_|^__rust_")
RUST_SKIP = (r"^(<[^>]+ as core::alloc::global::GlobalAlloc>::|"
             r"core::alloc::global::GlobalAlloc::|__rustc::__rust_|"
             r"alloc::alloc::|<alloc::alloc::Global|<?alloc::raw_vec::)")


def rust_allocator_advice(profile, min_share=WRAPPER_SHARE):
    """The warning for a top site that is Rust's global allocator (a
    large share of the bytes), or None."""
    for site in profile.sites[:3]:
        if profile.bytes and site.bytes >= min_share * profile.bytes and \
                RUST_GLOBAL_ALLOC.search(site.frame.function):
            return ("%s is Rust's global allocator: --skip '%s' charges the "
                    "code that allocates (or declare it once with RT_SKIP; "
                    "docs/probes.md, \"A Rust program: a global allocator "
                    "through a C shim\")" % (site.frame.function, RUST_SKIP))
    return None


def wrapper_suspects(profile, min_callers=WRAPPER_CALLERS,
                     min_share=WRAPPER_SHARE, max_chain=WRAPPER_CHAIN):
    """Sites that look like wrappers around the allocator: a large share
    of the bytes, reached from many different calling functions (Lua's
    luaM_malloc_ carried 99% of an interpreter's allocations), directly
    or through a chain of functions each called from one function only (a
    database engine's memory layer: 18 wrappers deep). -> [(site, number
    of callers, [the chain's functions, the site's first])]."""
    by_site = collections.defaultdict(list)
    for stack in profile.stacks:
        if stack.frames:
            f = stack.frames[0]
            by_site[(f.function, f.file, f.line)].append(stack)
    out = []
    for site in profile.sites[:3]:
        if not profile.bytes or site.bytes < min_share * profile.bytes:
            continue
        stacks = by_site.get((site.frame.function, site.frame.file,
                              site.frame.line), ())
        chain = [site.frame.function]
        for depth in range(1, max_chain + 1):
            callers = {s.frames[depth].function for s in stacks
                       if len(s.frames) > depth}
            if len(callers) >= min_callers:
                out.append((site, len(callers), chain))
                break
            if len(callers) != 1 or any(len(s.frames) <= depth
                                        for s in stacks):
                break   # a few callers, or a stack that ends here
            caller = next(iter(callers))
            if caller in chain:
                break   # recursion is no wrapper chain
            chain.append(caller)
    return out


def wrapper_advice(site, callers, chain):
    """The warning for a wrapper_suspects row: one --skip line to paste."""
    if len(chain) == 1:
        return ("%s is reached from %d different functions: if it is a "
                "wrapper around the allocator, --skip '^%s$' charges its "
                "callers (or declare it once with RT_SKIP in the source)"
                % (site.frame.function, callers,
                   re.escape(site.frame.function)))
    return ("%s is reached only through %s, which is reached from %d "
            "different functions: if these %d wrap the allocator, --skip "
            "'^(%s)$' charges their callers (or declare them once with "
            "RT_SKIP in the source)"
            % (chain[0], " -> ".join(chain[1:]), callers, len(chain),
               "|".join(re.escape(f) for f in chain)))
