"""valgrind massif as a contender, through the VALGRIND_MALLOCLIKE_BLOCK /
VALGRIND_FREELIKE_BLOCK requests in rt_alloc (storm-valgrind build).

massif answers a different question: the heap at its peak, per stack.
So its profile is bytes live at the peak per line, scored against the
storm's own peak (lib/score.peak_attribution), and it has no counts.
Options, and why:
  --threshold=0         else small sites merge into "in N places"
  --peak-inaccuracy=0   else a new peak must beat the last one by 1%
  --heap-admin=0        else 8 bytes per block are added
  --depth=50            the default 30 cuts deep stacks
  --alloc-fn=rt_alloc --alloc-fn=rt_realloc
                        the call site becomes the top frame, as a user
                        would set it up
massif checks for a new peak only just before a free; the storm frees
everything before it exits, so the peak it finds is the true one.
(DHAT, valgrind's other heap profiler, ignores these requests: version
3.19 prints "unknown DHAT client request code 1301" per allocation and
reports only malloc's blocks.)
"""

import os
import re

from . import score

NODE = re.compile(r"^ *n(\d+): (\d+) (.*)$")
# "0x10A3A9: fn (file.c:213)" (massif), "... (file.c:213:5)" (a column)
FRAME = re.compile(r"^0x[0-9A-Fa-f]+: (.*) \(([^():]*):(\d+)(?::\d+)?\)$")


class Massif:
    variant = "valgrind"
    name = "valgrind massif"
    peak_only = True

    def record(self, argv, tmp):
        return ["valgrind", "--tool=massif", "--massif-out-file=" +
                os.path.join(tmp, "massif.out"), "--threshold=0",
                "--peak-inaccuracy=0", "--heap-admin=0", "--depth=50",
                "--alloc-fn=rt_alloc", "--alloc-fn=rt_realloc"] + argv, None

    def analyze(self, tmp):
        return ["ms_print", os.path.join(tmp, "massif.out")]

    def outputs(self, tmp):
        return [os.path.join(tmp, "massif.out")]

    def profile(self, tmp, record_run, analyze_run):
        with open(os.path.join(tmp, "massif.out")) as f:
            # No loss counter: valgrind runs the program inside itself.
            return peak_profile(f.read().split("\n")), None


def peak_profile(lines):
    """massif.out lines -> {(file, line): [None, bytes at the peak]}: each
    leaf stack charged to its first frame outside the allocator."""
    start = lines.index("heap_tree=peak") + 1
    profile = {}
    # Pre-order tree; "nK:" is the number of children. A stack of
    # (frames so far, children still to read) per open node.
    open_nodes = []
    for text in lines[start:]:
        m = NODE.match(text)
        if not m:
            break
        kids, nbytes, label = int(m.group(1)), int(m.group(2)), m.group(3)
        frames = open_nodes[-1][0] + [label] if open_nodes else []
        if open_nodes:
            open_nodes[-1][1] -= 1
        if kids:
            open_nodes.append([frames, kids])
        else:
            score.charge(profile, source_frames(frames), None, nbytes)
        while open_nodes and open_nodes[-1][1] == 0:
            open_nodes.pop()
        if not open_nodes:
            break
    return profile


def source_frames(labels):
    """valgrind frame labels -> (file, line) of those that have one."""
    for label in labels:
        m = FRAME.match(label)
        if m:
            yield m.group(2), int(m.group(3))
