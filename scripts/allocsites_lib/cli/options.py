"""Report options, shared by scripts/allocsites.py and `allocsites report`."""

import argparse
import os
import re

from ..errors import UsageError

EXAMPLES = """\
examples:
  perf script --no-inline -s scripts/allocsites.py
        table of the 20 call sites that allocated the most bytes
  perf script --no-inline -s scripts/allocsites.py -- --svg flame.svg --json out.json
        also a flame graph and a JSON report
  perf script --no-inline -s scripts/allocsites.py -- --skip '^(xmalloc|arena_new)$'
        charge allocations to the callers of the wrappers xmalloc and arena_new
  perf script --no-inline -s scripts/allocsites.py -- --tag ast --tag tokens --top 5
        only allocations tagged ast or tokens, five largest sites
  perf script --no-inline -s scripts/allocsites.py -- --folded out.folded --weight count
        folded stacks weighted by allocation count, for flamegraph.pl
"""


class Parser(argparse.ArgumentParser):
    """argparse, but a bad option is a UsageError (one line, status 2)."""

    def error(self, message):
        raise UsageError(message)


def _positive(text):
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError("not a whole number: %r" % text)
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative: %r" % text)
    return value


def _size(text):
    """A number of bytes, as the probes carry them (64 bits): the C
    stages take it, and refused a larger one in a line that read as a
    damaged recording's."""
    value = _positive(text)
    if value >= 1 << 64:
        raise argparse.ArgumentTypeError("must be below 2^64: %r" % text)
    return value


def _at_least_one(text):
    value = _positive(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1: %r" % text)
    return value


def _regex(text):
    try:
        re.compile(text)
    except (re.error, OverflowError, RecursionError) as e:
        # OverflowError: a{4294967296}; RecursionError: groups nested
        # deeper than Python's stack
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise argparse.ArgumentTypeError("bad regex %r: %s" % (shown, e))
    return text


def parser(prog="allocsites.py"):
    """The perf-script entry's parser: the report options, and the hidden
    options `allocsites report` gives its perf script workers."""
    p = Parser(prog=prog, description="Per-call-site allocation report from "
               "perf samples of the sdt_rt:alloc probe.",
               epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_report_options(p)
    # Set by `allocsites report` for its perf script workers
    # (workers.py): write the Tally and the progress there, no report.
    p.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker-progress", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker-pids", default=None, help=argparse.SUPPRESS)
    # the recording's callchains are the kernel's fp walk (workers.py)
    p.add_argument("--worker-return-addresses", action="store_true",
                   help=argparse.SUPPRESS)
    p.add_argument("--worker-samples", type=int, default=None,
                   help=argparse.SUPPRESS)
    # perf loaded scripts/dlfilter/allocsites_mailbox.c from this path
    # (--dlfilter): the plain events come through it (mailbox.py).
    p.add_argument("--worker-mailbox", default=None, help=argparse.SUPPRESS)
    return p


# --weight: what a flame graph's boxes measure; --sort: the table's order.
# peak, leaked, temporary come from the liveness sweep (liveness.py).
WEIGHTS = ("bytes", "count", "peak", "leaked", "temporary")
SORTS = ("bytes", "count", "peak", "leaked", "temporary")


def add_report_options(p):
    """The report options, on the perf-script entry's parser and on the
    allocsites command's report and one-command parsers alike."""
    out = p.add_argument_group("outputs (stdout gets the table, or the one "
                               "FILE named -)")
    out.add_argument("--json", metavar="FILE", help="JSON report (version 2)")
    out.add_argument("--folded", metavar="FILE",
                     help="folded stacks, one 'a;b;site N' line per stack")
    out.add_argument("--svg", metavar="FILE", help="interactive flame graph")
    out.add_argument("--csv", metavar="FILE", help="one row per call site")
    out.add_argument("--pprof", metavar="FILE",
                     help="pprof profile (gzipped profile.proto, as Go "
                          "writes heap profiles): go tool pprof FILE")
    out.add_argument("--weight", choices=WEIGHTS, default="bytes",
                     help="what folded stacks and the flame graph measure "
                          "(default: bytes; peak, leaked and temporary need "
                          "the frees, recorded by default in exact mode)")
    out.add_argument("--timeline", metavar="FILE",
                     help="memory over time: an SVG chart of live bytes, "
                          "the top sites stacked, the peak marked")
    out.add_argument("--save-profile", metavar="FILE",
                     help="the profile document: the whole report as JSON, "
                          "from which `allocsites report --from FILE` "
                          "renders any output without the recording")
    out.add_argument("--sort", choices=SORTS, default="bytes",
                     help="rank the table's sites by bytes allocated "
                          "(default), allocation count, bytes live at the "
                          "peak, bytes leaked, or temporary allocations")
    flt = p.add_argument_group("filters")
    flt.add_argument("--tag", action="append", metavar="TAG",
                     help="keep only this tag (name or number; repeatable, "
                          "or comma-separated)")
    flt.add_argument("--min-size", type=_size, default=0, metavar="BYTES",
                     help="ignore allocations smaller than BYTES")
    flt.add_argument("--depth", type=_positive, default=None, metavar="N",
                     help="keep N frames of each stack (the site and N-1 "
                          "callers) in stacks, folded output and flame graph")
    flt.add_argument("--top", type=_at_least_one, default=None, metavar="N",
                     help="show N sites (table default 20; JSON and CSV "
                          "default all)")
    flt.add_argument("--phase", metavar="NAME", default=None,
                     help="only the allocations made in this phase "
                          "(RT_PHASE_BEGIN/END; a name or an id), in every "
                          "output")
    flt.add_argument("--skip", action="append", type=_regex, metavar="REGEX",
                     help="a function matching REGEX (re.search on its name) "
                          "that directly calls the allocator is a wrapper: "
                          "charge its caller instead (repeatable)")
    gst = p.add_argument_group("language runtimes")
    gst.add_argument("--guest", action="store_true", default=None,
                     help="sites by the guest program's location (the "
                          "script line a runtime's RT_ALLOC_GUEST gave), "
                          "[interpreter] for the runtime's own; stacks "
                          "with the guest frames spliced in")
    gst.add_argument("--guest-dispatch", action="append", type=_regex,
                     metavar="REGEX",
                     help="with --guest: the runtime's dispatch loop "
                          "(re.search on native function names), whose "
                          "frames and those inside it the guest frames "
                          "replace (as RT_GUEST_DISPATCH declares it; "
                          "repeatable)")
    p.add_argument("--title", default=None, help="flame graph title")
    p.add_argument("--stacks", metavar="SITE", default=None,
                   help="also print the call stacks that reach SITE (a "
                        "function, file:line or tag), most bytes first, "
                        "--top N of them (default 10); in JSON as "
                        "site_stacks")


# The report options as (dest, flag, kind): how report_argv gives a parsed
# Namespace back as argv to the perf script workers. A report option
# missing here fails tests/unit/test_options.py.
REPORT_FLAGS = (
    ("json", "--json", "value"), ("folded", "--folded", "value"),
    ("svg", "--svg", "value"), ("csv", "--csv", "value"),
    ("pprof", "--pprof", "value"),
    ("weight", "--weight", "value"), ("tag", "--tag", "list"),
    ("min_size", "--min-size", "value"), ("depth", "--depth", "value"),
    ("top", "--top", "value"), ("skip", "--skip", "list"),
    ("title", "--title", "value"), ("stacks", "--stacks", "value"),
    ("timeline", "--timeline", "value"), ("sort", "--sort", "value"),
    ("phase", "--phase", "value"), ("guest", "--guest", "flag"),
    ("guest_dispatch", "--guest-dispatch", "list"),
    ("save_profile", "--save-profile", "value"),
)


# The report options that act when the profile is made from the recording
# (fold, the liveness sweep, the --phase selection), by dest: a profile
# document (--save-profile) holds the profile as they made it, so
# `allocsites report --from` refuses them. Every other report option
# (the outputs, --top, --sort, --weight, --title, --stacks) is the
# rendering's own.
MADE_WITH = ("tag", "min_size", "depth", "skip", "phase", "guest",
             "guest_dispatch")


def check_render_only(opts):
    """Raises UsageError (one line) for an option that --from cannot
    change: one of MADE_WITH."""
    for dest in MADE_WITH:
        if getattr(opts, dest, None):
            raise UsageError(
                "%s cannot be used with --from: the profile document holds "
                "the profile as it was made; give %s when reporting the "
                "recording" % (flag(dest), flag(dest)))


def report_options(ns):
    """The report options of a command line parsed once (parsers.py), as
    the typed object `allocsites report` and the perf-script entry take:
    a Namespace of exactly parse()'s dests, as parse() gives them (its
    defaults where ns has none, --tag's lists split at commas), without
    a round trip through argv. Only a perf script worker, another
    process, gets them as argv (report_argv)."""
    out = parser().parse_args([])
    for dest in vars(out):
        if hasattr(ns, dest):
            setattr(out, dest, getattr(ns, dest))
    split_tags(out)
    return out


def report_argv(opts):
    """The report options of a parsed Namespace, as argv: for the perf
    script workers (read/workers.py), which perf starts as processes of
    their own with allocsites.py and its arguments."""
    out = []
    for dest, flag, kind in REPORT_FLAGS:
        value = getattr(opts, dest, None)
        if value is None:
            continue
        if kind == "flag":
            out += [flag] if value else []
            continue
        for v in (value if kind == "list" else [value]):
            out += [flag, str(v)]
    return out


def parse(argv, prog="allocsites.py"):
    """argv -> argparse.Namespace; raises UsageError with one line."""
    opts = parser(prog).parse_args(argv)
    split_tags(opts)
    check_outputs(opts)
    return opts


def split_tags(opts):
    """--tag's values split at commas, in place; UsageError for none."""
    if opts.tag is not None:
        tags = [t for arg in opts.tag for t in arg.split(",") if t]
        if not tags:   # --tag "" (an empty variable): not "every tag"
            raise UsageError("--tag %r names no tag" % ",".join(opts.tag))
        opts.tag = tags


STDOUT = "-"   # an output FILE of "-": standard output, instead of the table


def check_outputs(opts):
    """Each output's directory exists, and no two outputs share a file
    (or standard output)."""
    seen = {}
    for name in OUTPUTS:
        path = getattr(opts, name)
        if path == STDOUT:
            if STDOUT in seen:
                raise UsageError("%s and %s: only one output can go to "
                                 "standard output (-)"
                                 % (flag(seen[STDOUT]), flag(name)))
            seen[STDOUT] = name
        elif path is not None:
            parent = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(parent):
                raise UsageError("%s %s: directory %s does not exist"
                                 % (flag(name), path, parent))
            real = os.path.realpath(path)
            if real in seen:
                raise UsageError("%s and %s name the same file %s: one "
                                 "would overwrite the other"
                                 % (flag(seen[real]), flag(name), path))
            seen[real] = name


OUTPUTS = ("json", "folded", "svg", "csv", "pprof", "timeline",
           "save_profile")


def flag(dest):
    """An option's flag from its dest: save_profile -> --save-profile."""
    return "--" + dest.replace("_", "-")


def check_not_input(opts, data, what="recording"):
    """No output file may be the input it is made from (-o out.svg once
    made the flame graph overwrite the recording); what: the input's
    name ("recording", "profile document")."""
    for name in OUTPUTS:
        path = getattr(opts, name)
        if path is not None and path != STDOUT and \
                os.path.realpath(path) == os.path.realpath(data):
            if what != "recording":
                raise UsageError("%s %s is the %s read; name the %s "
                                 "another file" % (flag(name), path, what,
                                                   flag(name)[2:]))
            raise UsageError("%s %s is the recording itself; name the "
                             "recording .data or the %s another file"
                             % (flag(name), path, flag(name)[2:]))
