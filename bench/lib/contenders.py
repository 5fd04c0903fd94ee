"""The contenders of bench/compare.py, in table order (the first is the
baseline the ratios divide by). Each has:
  name, variant            row label; storm build (lib/build.py)
  record(argv, tmp)        -> (command, extra environment or None)
  analyze                  None (nothing to analyze), or
                           analyze(tmp) -> command (None: no separate step)
  outputs(tmp)             files whose size is the output size
  profile(tmp, rec, ana)   -> (profile for lib/score.py, lost)
  peak_only                True when the profile is bytes live at the peak
"""

from .tool_allocsites import Allocsites, Plain, ProbesOff
from .tool_bpftrace import Bpftrace
from .tool_dhat import Dhat
from .tool_heaptrack import Heaptrack
from .tool_massif import Massif


def all_contenders():
    return [Plain(), ProbesOff(), Allocsites(), Allocsites("512k"),
            Allocsites("64k"), Heaptrack(), Bpftrace(), Massif(), Dhat()]
