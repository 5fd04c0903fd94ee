#!/usr/bin/python3
"""For each USDT probe site in the given ELF files, report whether the
function that contains it uses the red zone (memory below %rsp, i.e. a
negative displacement off %rsp) -- the data an optimized (call-based) uprobe
would overwrite -- and whether the function contains a call (non-leaf
functions do not get a red zone from GCC/clang)."""
import re, subprocess, sys

def notes(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    res, prov, name = [], None, None
    for line in out.splitlines():
        m = re.search(r"Provider: (\S+)", line)
        if m: prov = m.group(1)
        m = re.search(r"Name: (\S+)", line)
        if m: name = m.group(1)
        m = re.search(r"Location: (0x[0-9a-f]+)", line)
        if m: res.append((prov, name, int(m.group(1), 16)))
    return res

def functions(path):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True, text=True).stdout
    funcs, cur = [], None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            cur = [m.group(2), int(m.group(1), 16), []]; funcs.append(cur); continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if m and cur: cur[2].append((int(m.group(1), 16), m.group(2)))
    return funcs

for path in sys.argv[1:]:
    fs = functions(path)
    for prov, name, loc in notes(path):
        f = next((f for f in fs if f[2] and f[1] <= loc <= f[2][-1][0]), None)
        if not f: continue
        rz = [i for a, i in f[2] if re.search(r"-0x[0-9a-f]+\(%rsp\)", i)]
        calls = any(re.match(r"call", i) for a, i in f[2])
        print(f"{path.split('/')[-1]:14s} {prov}:{name:7s} {loc:#x} in {f[0][:40]:40s} "
              f"redzone_refs={len(rz)} has_call={calls}")
