#!/usr/bin/python3
"""Summarize results.csv from measure.sh: medians, min-max, per-event cost."""
import csv
import statistics as st
import sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1] if len(sys.argv) > 1 else "results.csv")))
g = defaultdict(list)
for r in rows:
    g[(r["variant"], r["mode"])].append(r)

# native per-iteration time (subtracted from the recorded runs)
native = {}
for v in ("p1", "p5"):
    rs = g.get((v, "native"), [])
    if rs:
        native[v] = st.median(float(r["loop_s"]) / int(r["n"]) for r in rs) * 1e6

def fmt(xs, scale=1.0, nd=2):
    xs = [x * scale for x in xs]
    return f"{st.median(xs):.{nd}f} ({min(xs):.{nd}f}-{max(xs):.{nd}f})"

modes = [("native", "native (no event)"), ("stat", "perf stat (counting)"),
         ("rec", "perf record, no call graph"),
         ("dwarf", "perf record, dwarf,8192 -z -m16384"),
         ("sem", "perf record, semaphore-guarded probe")]
print("| mode | probe | n | loop wall s | wall us/event | CPU us/event | samples | lost | uprobe syscalls |")
print("|---|---|---|---|---|---|---|---|---|")
for m, label in modes:
    for v in ("p1", "p5"):
        key = (v if m != "sem" else "s" + v[1:], m)
        rs = g.get(key, [])
        if not rs:
            continue
        n = int(rs[0]["n"])
        loop = [float(r["loop_s"]) for r in rs]
        cpu = [float(r["cpu_s"]) for r in rs]
        nat = native.get(v, 0.0)
        per = [x / n * 1e6 - nat for x in loop]
        cper = [x / n * 1e6 - nat for x in cpu]
        samples = [r["samples"] for r in rs if r["samples"]]
        lost = [r["lost"] for r in rs if r["lost"]]
        sysc = [r["uprobe_syscalls"] for r in rs if r["uprobe_syscalls"]]
        nop = "1-byte nop" if v == "p1" else "5-byte nop"
        if m == "native":
            print(f"| {label} | {nop} | {n} | {fmt(loop, 1, 4)} | {fmt([x / n * 1e6 for x in loop], 1, 4)} | {fmt([x / n * 1e6 for x in cpu], 1, 4)} | - | - | - |")
            continue
        print(f"| {label} | {nop} | {n} | {fmt(loop)} | {fmt(per)} | {fmt(cper)} | "
              f"{'/'.join(samples) or '-'} | {'/'.join(lost) or '-'} | {'/'.join(sysc) or '-'} |")

print()
print("Ratio of medians, 1-byte / 5-byte (per event, wall and CPU):")
for m, label in modes[1:]:
    a = g.get(("p1" if m != "sem" else "s1", m), [])
    b = g.get(("p5" if m != "sem" else "s5", m), [])
    if not a or not b:
        continue
    n = int(a[0]["n"])
    wa = st.median(float(r["loop_s"]) for r in a) / n * 1e6 - native.get("p1", 0)
    wb = st.median(float(r["loop_s"]) for r in b) / n * 1e6 - native.get("p5", 0)
    ca = st.median(float(r["cpu_s"]) for r in a) / n * 1e6
    cb = st.median(float(r["cpu_s"]) for r in b) / n * 1e6
    print(f"- {label}: wall {wa:.2f} vs {wb:.2f} us (x{wa / wb:.2f}, saves {wa - wb:.2f} us); "
          f"CPU {ca:.2f} vs {cb:.2f} us (x{ca / cb:.2f}, saves {ca - cb:.2f} us)")
