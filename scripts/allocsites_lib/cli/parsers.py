"""The command's parsers: one per form, from shared option groups.

The allocsites command line: one argparse parser per form, built from
shared option groups, so `record`, `report` and the one-command form
cannot disagree about an option.

  allocsites record [record options] [--] PROG [ARGS...]
  allocsites report [-i FILE] [-j N] [report options]
  allocsites [record options] [-j N] [report options] -- PROG [ARGS...]

The report options themselves are options.add_report_options (shared with
the perf-script entry scripts/allocsites.py). parse() returns an
Invocation; each form's --help prints its own options and examples."""

import argparse
import collections
import os

from . import options
from ..read.perfdata import STACK_COPY_MAX
from ..record import perfcommand
from .options import UsageError

# The largest mean gap the header takes (RT_SAMPLE_BYTES_MAX in
# include/rt_sampler.h); it falls back to its default above it.
SAMPLE_MAX = 1 << 62

USAGE = """\
usage: allocsites record [record options] [--] PROG [ARGS...]
       allocsites report [-i FILE] [-j N] [report options]
       allocsites report --from PROFILE [output options]
       allocsites [record options] [-j N] [report options] -- PROG [ARGS...]
       allocsites diff BASE NEW [--json FILE] [--svg FILE] [--top N]

Per-call-site allocation profiles of allocators annotated with the rt USDT
probes (include/rt_probes.h), recorded with perf.

  record   create the sdt_rt probe events for PROG (and the libraries it
           links), run it under perf record, remove the events again
  report   the table (and --json/--svg/--folded/--csv files) from a recording,
           or from a profile document it saved (--save-profile, --from)
  -- PROG  record, then report with a flame graph beside the data
  diff     what changed from BASE to NEW (recordings, JSON reports or
           profile documents)

Each form lists its options and examples with --help:
  allocsites record --help      allocsites report --help      allocsites -- --help
  allocsites diff --help        allocsites --version

examples:
  allocsites -- ./build/minicc 500
        profile minicc (about 215,000 allocations): table on stdout, flame
        graph in perf.svg, the recording in perf.data (about 10 MiB)
  allocsites --sample 512k -- ./build/minicc 5000
        a long run, sampled: estimated bytes and counts per site
  allocsites record -o run.data -- ./server --port 8080 --name "my server"
  allocsites report -i run.data --json run.json --skip '^xmalloc$'
        charge allocations made through xmalloc to xmalloc's callers
  allocsites --guest -- ./build/lua_guest script.lua
        a language runtime (its allocator annotated with RT_ALLOC_GUEST):
        sites by the script's lines, [interpreter] for its own
"""

RECORD_EXAMPLES = """\
examples:
  allocsites record -- ./build/minicc 500
        every allocation of minicc, into perf.data
  allocsites record -o run.data --stack-size 16384 -- ./lua script.lua
        an interpreter: a deeper stack copy so stacks reach main
  allocsites record --sample 512k -o long.data -- ./server --port 8080
        sampled: about one allocation per 512 KiB allocated
  allocsites record --lib ./plugins/libparse.so -- ./host
        also probe a library the program loads with dlopen
  allocsites record --lib ./.libs/lt-minicc -- ./minicc 500
        a wrapper script (libtool's) that starts the probed program
  allocsites record -- env RUST_BACKTRACE=0 nice -n 5 ./prog
        a launcher: the program it runs is found and probed
  allocsites record -a --lib ./build/cc -- make -j8
        a parallel build of a probed compiler: recorded on every CPU,
        as the compilers forked side by side can lose events otherwise
  allocsites record -p 4242 --duration 30 -o server.data
        attach to a running process for 30 s (or until Ctrl-C); it keeps
        running, and its probes cost nothing again afterwards
"""

REPORT_EXAMPLES = """\
examples:
  allocsites report
        table of the 20 call sites of perf.data that allocated the most bytes
  allocsites report -i run.data --svg run.svg --json run.json
        also a flame graph and a JSON report
  allocsites report -i run.data --skip '^(xmalloc|arena_new)$'
        charge allocations to the callers of the wrappers xmalloc and arena_new
  allocsites report -i run.data --tag ast --top 5 --csv ast.csv
        only allocations tagged ast, five largest sites
  allocsites report -i run.data --pprof run.pb.gz
        a pprof profile: go tool pprof -top run.pb.gz, or a Pyroscope
        or Parca upload
  allocsites report -i run.data --stacks parser.c:127
        also the call stacks that reach the site at parser.c line 127
  allocsites report -i run.data --timeline mem.svg
        memory over time: live bytes, the largest sites, the phases
  allocsites report -i run.data --phase parse
        only what phase parse allocated (RT_PHASE_BEGIN/END, named with
        RT_PHASE_NAME)
  allocsites report -i run.data --save-profile run.profile.json
  allocsites report --from run.profile.json --pprof run.pb.gz --top 5
        save the whole report as a profile document, then render any
        output from it without the recording (--tag, --min-size,
        --depth, --skip, --phase, --guest are the document's)
  allocsites report -i run.data --guest --svg guest.svg
        a language runtime's profile by its guest program's lines
        (RT_ALLOC_GUEST, RT_GUEST): the script's frames spliced into the
        flame graph in place of the interpreter's dispatch loop
"""

PROFILE_EXAMPLES = """\
examples:
  allocsites -- ./build/minicc 500
        record into perf.data (about 10 MiB here), then the table, and
        the flame graph perf.svg
  allocsites -o c.data --top 10 --json c.json -- ./build/minicc 500
        record into c.data; ten sites, a JSON report, the flame graph c.svg
  allocsites --sample 512k -- ./build/minicc 5000
        a long run, sampled: estimated bytes and counts per site
"""

DIFF_EXAMPLES = """\
examples:
  allocsites diff before.data after.data
        the sites whose bytes or counts changed, largest change first
  allocsites diff before.json after.json --svg diff.svg --json diff.json
        also a differential flame graph (grown red, shrunk blue) and JSON
"""


def diff_parser():
    p = _parser("allocsites diff",
                "allocsites diff BASE NEW [--json FILE] [--svg FILE] "
                "[--top N] [--guest]",
                "What changed from BASE to NEW: per-site bytes and counts,\n"
                "sites matched across a rebuild (same line, else same\n"
                "function and file), new and gone sites, the totals.\n"
                "BASE and NEW are recordings, JSON reports or profile\n"
                "documents (report --save-profile).",
                DIFF_EXAMPLES)
    p.add_argument("base", metavar="BASE")
    p.add_argument("new", metavar="NEW")
    p.add_argument("--json", metavar="FILE", help="the diff as JSON")
    p.add_argument("--svg", metavar="FILE",
                   help="differential flame graph: NEW's widths, grown red, "
                        "shrunk blue")
    p.add_argument("--top", type=at_least_one("--top", "a number of rows"),
                   default=20, metavar="N",
                   help="rows in the table (default 20)")
    p.add_argument("--guest", action="store_true",
                   help="recordings of a language runtime: sites by guest "
                        "location (report --guest; a JSON report made with "
                        "--guest already is)")
    return p


# form: "record", "report", "render" (report --from), "profile" or
# "diff"; record: the record options (output, stack_size, libs, frees,
# sample, pid, duration) or None; input: the recording to report (report
# form), the profile document (render form); jobs: -j or None;
# opts: the report options (options.report_options: typed, parsed
# once), or diff's options in the diff form; program: PROG's argv.
Invocation = collections.namedtuple(
    "Invocation", "form record input jobs opts program")


def bytes_value(flag):
    """'512k' / '1m' / '4096' -> int (k and m are KiB and MiB)."""
    def convert(text):
        scale = {"k": 1 << 10, "m": 1 << 20}.get(text[-1:].lower(), 1)
        digits = text[:-1] if scale > 1 else text
        if not digits.isdigit():
            raise UsageError("%s: not a whole number of bytes: %r"
                             % (flag, text))
        return int(digits) * scale
    return convert


def sample_bytes(text):
    value = bytes_value("--sample")(text)
    if value > SAMPLE_MAX:
        raise UsageError("--sample must be at most %d bytes (2^62), not %d"
                         % (SAMPLE_MAX, value))
    return value


def stack_size(text):
    value = bytes_value("--stack-size")(text)
    if value < 8 or value > STACK_COPY_MAX or value % 8:
        raise UsageError("--stack-size must be a multiple of 8 from 8 to "
                         "%d, not %d" % (STACK_COPY_MAX, value))
    return value


def at_least_one(flag, what):
    """A converter for a whole number >= 1, whose error names the option
    and what the number counts."""
    def convert(text):
        if not text.isdigit() or int(text) < 1:
            raise UsageError("%s: not %s: %r" % (flag, what, text))
        return int(text)
    return convert


def add_record_options(p):
    g = p.add_argument_group("record options")
    g.add_argument("-o", "--output", default="perf.data", metavar="FILE",
                   help="perf data file to write (default: perf.data)")
    g.add_argument("--sample", type=sample_bytes, default=0, metavar="BYTES",
                   help="sampled mode: about one allocation per BYTES "
                        "allocated (k/m suffixes; e.g. 512k), estimates "
                        "instead of exact counts, at a few percent of the "
                        "cost; 0 or absent: every allocation "
                        "(docs/sampling.md)")
    g.add_argument("--stack-size", type=stack_size,
                   default=perfcommand.DEFAULT_STACK_SIZE, metavar="BYTES",
                   help="user stack copied per allocation for unwinding "
                        "(default %d, max %d, multiple of 8); raise it "
                        "when the report says stacks were cut short"
                        % (perfcommand.DEFAULT_STACK_SIZE, STACK_COPY_MAX))
    g.add_argument("--unwind", choices=("dwarf", "fp", "auto", "none"),
                   default="dwarf",
                   help="how stacks are taken: dwarf (default) copies "
                        "--stack-size bytes of stack per allocation and the "
                        "report unwinds them with the binaries' CFI; fp "
                        "lets the kernel walk the frame pointers, nothing "
                        "copied: cheaper and smaller, for programs built "
                        "with -fno-omit-frame-pointer (a library without "
                        "them ends the stack there: the report counts "
                        "such stacks as cut short); auto takes fp where "
                        "the program and the allocator's binaries keep "
                        "frame pointers (checked in their code, said in "
                        "one line), else dwarf; none takes no stacks "
                        "(totals, liveness and phases only: the cost floor "
                        "of recording every event)")
    g.add_argument("--lib", dest="libs", action="append", default=[],
                   metavar="SO",
                   help="also probe this shared library (one PROG loads "
                        "with dlopen, so ldd cannot name it) or program "
                        "(one PROG starts with exec; PROG may then be a "
                        "script); repeatable")
    g.add_argument("-p", "--pid", type=at_least_one("-p/--pid",
                                                   "a process id"),
                   default=None,
                   metavar="PID",
                   help="attach to this running process (its executable "
                        "and the libraries it has mapped) instead of "
                        "starting PROG; until Ctrl-C or --duration")
    g.add_argument("-a", "--system-wide", action="store_true",
                   help="record the probes in every process on the "
                        "machine while PROG runs (perf record -a), not "
                        "only in PROG and the children it forks: on Linux "
                        "6.18 the probes of forked children that run side "
                        "by side can stop firing in a per-task recording "
                        "(docs/limitations.md); other processes of the "
                        "probed binaries are then in the profile too")
    g.add_argument("--duration",
                   type=at_least_one("--duration", "a number of seconds"),
                   default=None,
                   metavar="SECONDS",
                   help="with -p: stop after this many seconds")
    frees = g.add_mutually_exclusive_group()
    frees.add_argument("--no-frees", action="store_true",
                       help="exact mode: do not record rt:free (the report "
                            "then has no peak, leaked or temporary figures; "
                            "saves a trap per free)")
    frees.add_argument("--frees", action="store_true",
                       help="sampled mode: record every rt:free, not only "
                            "the frees of sampled allocations (exact mode "
                            "records every free already)")


def add_jobs_option(p):
    p.add_argument("-j", "--jobs",
                   type=at_least_one("-j/--jobs", "a number of workers"),
                   default=None,
                   metavar="N",
                   help="perf script workers, each on a time range of the "
                        "recording (default: one per CPU, fewer for small or "
                        "memory-heavy recordings)")


def _parser(prog, usage, description, epilog):
    return options.Parser(
        prog=prog, usage=usage, description=description, epilog=epilog,
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter)


def record_parser():
    p = _parser("allocsites record",
                "allocsites record [record options] [--] PROG [ARGS...]",
                "Run PROG under perf record with the sdt_rt probes of PROG\n"
                "and its libraries; remove the probe events after.",
                RECORD_EXAMPLES)
    add_record_options(p)
    return p


def report_parser():
    p = _parser("allocsites report",
                "allocsites report [-i FILE] [-j N] [report options]\n"
                "       allocsites report --from PROFILE [output options]",
                "The per-call-site report of a recording: a table on\n"
                "stdout, and the files the outputs name.",
                REPORT_EXAMPLES)
    p.add_argument("-i", "--input", default=None, metavar="FILE",
                   help="perf data file to read (default: perf.data)")
    p.add_argument("--from", dest="from_profile", default=None,
                   metavar="PROFILE",
                   help="render from a profile document (saved by "
                        "--save-profile) instead of a recording. The "
                        "outputs, --top, --sort, --weight, --title and "
                        "--stacks are the rendering's; %s are the "
                        "document's (as it was made) and cannot be given"
                        % ", ".join(options.flag(d)
                                    for d in options.MADE_WITH))
    add_jobs_option(p)
    options.add_report_options(p)
    return p


def profile_parser():
    p = _parser("allocsites",
                "allocsites [record options] [-j N] [report options] "
                "-- PROG [ARGS...]",
                "Record PROG, then report it, with the flame graph beside\n"
                "the recording (FILE.svg for -o FILE.data) unless --svg\n"
                "names another file.",
                PROFILE_EXAMPLES)
    add_record_options(p)
    add_jobs_option(p)
    options.add_report_options(p)
    return p


def split_program(argv):
    """(our args, program argv or None) around the first '--'."""
    if "--" not in argv:
        return argv, None
    i = argv.index("--")
    return argv[:i], argv[i + 1:]


RECORD_DESTS = ("output", "sample", "stack_size", "unwind", "libs", "frees",
                "no_frees", "pid", "duration", "system_wide")


def program_after_options(parser, args):
    """(our args, program argv): the program starts after a '--', or at
    the first word that is neither an option nor an option's value, as
    perf record takes it. (args, None) when there is none, or when an
    unknown option comes first (argparse then says so)."""
    takes_value = {name: action.nargs != 0
                   for action in parser._actions
                   for name in action.option_strings}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return args[:i], args[i + 1:]
        if not arg.startswith("-") or arg == "-":
            return args[:i], args[i:]
        name = arg.split("=", 1)[0]
        if name not in takes_value:
            return args, None
        i += 2 if takes_value[name] and "=" not in arg else 1
    return args, None


def parse(argv):
    """argv (without the command name) -> Invocation, or None after
    printing help. Raises UsageError with one line."""
    if not argv or argv[0] in ("-h", "--help", "help"):
        if not argv:
            raise UsageError("no command: allocsites record|report|-- PROG "
                             "(allocsites --help)")
        return None
    if argv[0] == "diff":
        opts = diff_parser().parse_args(argv[1:])
        return Invocation("diff", None, None, None, opts, None)
    form = argv[0] if argv[0] in ("record", "report") else "profile"
    args = argv[1:] if form != "profile" else argv
    if form == "record":
        # `allocsites record ./prog args` as perf record takes it, or
        # `allocsites record -- ./prog args`
        ours, program = program_after_options(record_parser(), args)
    else:
        ours, program = split_program(args) if form != "report" \
            else (args, None)
    if form == "profile" and program is not None and \
            program[:1] in (["-h"], ["--help"]) and not ours:
        ours, program = ["--help"], None    # allocsites -- --help
    if form == "record" and program is None and \
            ({"-p", "--pid"} & set(ours) or
             any(a.startswith("--pid=") for a in ours)):
        program = []    # attach: no program
    if form == "profile" and program is None and \
            not {"-h", "--help"} & set(ours):
        raise UsageError("unknown command %s: put the program after -- "
                         "(allocsites --help)" % argv[0])
    p = {"record": record_parser, "report": report_parser,
         "profile": profile_parser}[form]()
    opts = p.parse_args(ours)          # exits 0 after --help
    record = None
    if form != "report":
        if program is None:
            raise UsageError("record: put the program after --")
        if not program and opts.pid is None:
            raise UsageError("no program given after --")
        if program and opts.pid is not None:
            raise UsageError("record: -p attaches to a running process; "
                             "give it no program")
        if opts.system_wide and opts.pid is not None:
            raise UsageError("record: -a records every process while PROG "
                             "runs; -p attaches to one: not both")
        if opts.duration is not None and opts.pid is None:
            raise UsageError("record: --duration needs -p")
        record = argparse.Namespace(**{d: getattr(opts, d)
                                       for d in RECORD_DESTS})
    if form == "report" and opts.from_profile is not None:
        return _render_invocation(opts)
    if form == "report" and opts.input is None:
        opts.input = "perf.data"
    if form == "profile" and opts.svg is None:
        opts.svg = os.path.splitext(opts.output)[0] + ".svg"
    report_opts = None
    if form != "record":
        options.check_outputs(opts)
        options.check_not_input(opts, opts.input if form == "report"
                                else opts.output)
        report_opts = options.report_options(opts)
    return Invocation(form, record, getattr(opts, "input", None),
                      getattr(opts, "jobs", None), report_opts, program)


def _render_invocation(opts):
    """allocsites report --from FILE: the "render" form, FILE as input."""
    if opts.input is not None:
        raise UsageError("-i and --from: --from renders a saved profile "
                         "document, there is no recording to read")
    if opts.jobs is not None:
        raise UsageError("-j and --from: a profile document is rendered "
                         "without reading a recording")
    options.check_render_only(opts)
    options.check_outputs(opts)
    options.check_not_input(opts, opts.from_profile, "profile document")
    return Invocation("render", None, opts.from_profile, None,
                      options.report_options(opts), None)
