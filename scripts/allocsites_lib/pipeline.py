"""The order of the stages, and only that. Each is a folder:

    record/   the program runs under perf record with the rt probes as
              uprobe events (record/recording.py runs it); the recording
              gets its sidecars (FILE.buildids, FILE.scan)
    read/     perf.data -> a Tally (read/tally.py): the native reader
              (allocsites-read) or perf script workers, each running the
              entry script scripts/allocsites.py on a time range
    analyze/  Tally -> Report: symbolize, fold, the liveness sweep,
              phases, completeness, wrappers (analyze/assemble.py)
    render/   Report -> the table on stdout and the files asked for:
              JSON, CSV, folded, flame graph, timeline, pprof, --stacks,
              the profile document (render/outputs.py); render/ reads
              the Report only, analyze/ never imports render/

The profile document (--save-profile) is the Report as JSON:
`allocsites report --from` reads it back (analyze/document.py) and
renders from it, without the record and read stages
(cli/command.py's render_saved).

cli/ parses the command line. Both ways a report is made (`allocsites
report`, and perf script -s scripts/allocsites.py on its own) end here,
with a Tally read and the facts about the recording."""

import sys

from .analyze import assemble
from .render import outputs


def analyze_and_render(tally, opts, symbolizer, lost, lost_reason,
                       data=None, out=sys.stdout, err=sys.stderr, **facts):
    """analyze then render: the Report of tally
    (assemble.build_after_reading; facts: what the reading stage knows of
    the recording), its table and files written as opts ask
    (outputs.write_outputs). Returns the Report (its verdict and
    bad_options decide the exit status)."""
    rep = assemble.build_after_reading(tally, opts, symbolizer, lost,
                                       lost_reason, data, **facts)
    outputs.write_outputs(rep, opts, out=out, err=err)
    return rep
