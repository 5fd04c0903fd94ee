"""The native reader's tally (scripts/reader/tally.c) against the Python
tally it replaced, on the same events.

`allocsites-read --text FILE` prints every tracepoint sample the tally
gets, in the order it gets them. Fed one by one as perf script's field
dicts through parse.Reader.read and Tally.add_fields (what the native
path did before tally.c: the thread's process the first one seen for the
thread id) they make the oracle; native.run(READER, FILE, Tally(min_size))
makes the C tally. Every Tally field must be equal, the dicts that give
the report's order (stacks, sampled, events, received, ...) in the same
order, the event log event for event with its keys in the same order.

Inputs: the seeds (tests/fuzz/seeds/), every mutant tests/fuzz/mutate.py
makes of them (where the reader reads part of a file and then fails, the
two agree on the part), and semantic variants of the uncompressed seeds
made here with mutate.PerfData, so that each rule in tally.c's header
runs: duplicate records, every plain kind and invalid ones, exit padding,
rt:sample (phase marks, rates, phases, old headers), missing and signed
fields, a thread's process changing, sums past 2^64. min_size 0 and 64.
No perf, no root: the recordings are files."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "tests", "fuzz"))

import collections  # noqa: E402
import concurrent.futures  # noqa: E402
import multiprocessing  # noqa: E402
import re  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import unittest  # noqa: E402

import mutate  # noqa: E402
from allocsites_lib import contract  # noqa: E402
from allocsites_lib.read import native, parse  # noqa: E402
from allocsites_lib.read.tally import Tally  # noqa: E402

BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
READER = os.path.join(BUILD, "allocsites-read")
MIN_SIZES = (0, 64)
# The mutants that stress the reader's memory (zstd and fork bombs, 8000
# mappings, 10^5 ids or formats: seconds a run, half of this test's time
# with two sizes) carry the seed's events: min_size 0 only
HEAVY = re.compile(r"_bomb_|_many_\d")
TIMEOUT = 120      # s, one run of the reader (the largest mutant: ~3 s)
NS = 10 ** 9
U64 = (1 << 64) - 1


# ------------------------------------------------------------ the text

_EVENT = re.compile(rb"(\d+)/(\d+) (\d+)\.(\d{9}) ")
# "\tPC SYM+0xOFF (PATH @0xADDR)": %#llx prints 0 as "0"
_FRAME = re.compile(rb"\t([0-9a-f]+) (.*?)\+0x([0-9a-f]+) \((.*) "
                    rb"@(0x[0-9a-f]+|0)\)\Z", re.S)


def _str(b):
    return b.decode("utf-8", "surrogateescape")


def parse_text(out):
    """allocsites-read --text's output -> [(pid, tid, time, event name,
    [(field, value)], [(pc, sym or None, off, path, addr or None)])]."""
    events = []
    for line in out.split(b"\n"):
        if not line:
            continue
        if line.startswith(b"\t-- ") and events:
            # the stack's end (main.c): (None, its marker's DSO)
            events[-1][5].append((None, parse.END_TEXT[_str(line[4:])]))
            continue
        if line.startswith(b"\t"):
            m = _FRAME.match(line)
            if m is None or not events:
                raise ValueError("a frame line not read: %r" % line)
            pc, sym, off, path, addr = m.groups()
            sym = None if sym == b"[unknown]" else _str(sym)
            # "@0": a pc in no file the reader could read
            events[-1][5].append((int(pc, 16), sym, int(off, 16),
                                  _str(path),
                                  None if addr == b"0" else int(addr, 16)))
            continue
        m = _EVENT.match(line)
        if m is None:
            raise ValueError("an event line not read: %r" % line)
        pid, tid, sec, nsec = (int(x) for x in m.groups())
        # NAME: f=V f=V ...: a field's name has no space and its value
        # no ':', so the name ends at the last token that ends in ':'
        tokens = line[m.end():].split(b" ")
        last = max(i for i, t in enumerate(tokens) if t.endswith(b":"))
        fields = []
        for t in tokens[last + 1:]:
            k, _, v = t.rpartition(b"=")
            fields.append((_str(k), int(v, 16)))
        events.append((pid, tid, sec * NS + nsec,
                       _str(b" ".join(tokens[:last + 1])[:-1]), fields, []))
    return events


def _frames_only(frames):
    return [f for f in frames if f[0] is not None]


def perf_chain(frames):
    """perf script's common_callchain for the frames of a --text event."""
    chain = []
    for pc, sym, off, path, addr in _frames_only(frames):
        entry = {"ip": pc, "dso": path}
        if sym is not None:
            entry["sym"] = {"start": addr - off, "end": addr - off,
                            "name": sym}
            entry["sym_off"] = off
        chain.append(entry)
    return chain


def read_events(events):
    """Each --text event through parse.Reader.read as perf script's
    field dict, as the native path did before tally.c: Tally.add_fields's
    arguments, or None (malformed)."""
    reader = parse.Reader(False, None)
    pids = reader.pids   # Reader makes its own dict for an empty one
    out = []
    for pid, tid, time, name, fields, frames in events:
        if tid not in pids:
            pids[tid] = pid
        f = dict(fields)
        f["common_pid"] = tid
        f["common_s"] = time // NS
        f["common_ns"] = time % NS
        f["common_callchain"] = perf_chain(frames)
        # Reader converts a chain once per tuple of ips (in what perf
        # records, equal ips are equal frames); the reader resolves each
        # process's stacks in its own maps (emit.c), as the native path
        # did before tally.c, and a hostile file can put equal ips in
        # two address spaces: so every chain is converted afresh
        reader._chains.clear()
        out.append(in_files(reader.read(name.replace(":", "__"), f, None),
                            frames))
    return out


def in_files(value, frames):
    """read_events's value with the reader's convention for a frame
    without a symbol in a file it read (emit.c, native.frame): named by
    its address in the file, which perf's entry has no field for; and
    the stack's end marker (reader.h), which perf's chain has none of."""
    if value is None or not isinstance(value[6], tuple):
        return value
    ends = [f[1] for f in frames if f[0] is None]
    user = [f for f in _frames_only(frames) if f[0] < parse._USER_IP_LIMIT]
    raws = value[6]
    assert len(user) == len(raws), (user, raws)
    fixed = tuple(
        parse.RawFrame(r.dso, addr, None, None, None)
        if r.addr is None and addr is not None else r
        for r, (_, _, _, _, addr) in zip(raws, user)) + \
        tuple(parse.end_frame(dso) for dso in ends)
    if fixed == tuple(raws):
        return value
    if isinstance(raws, parse.GuestFrames):
        fixed = parse.GuestFrames(fixed, raws.guest)
    return value[:6] + (fixed,) + value[7:]


def oracle(values, min_size):
    """The Python tally of read_events's values."""
    tally = Tally(min_size)
    for v in values:
        if v is None:
            tally.add(None)
        else:
            tally.add_fields(*v)
    return tally


# ------------------------------------------------------------ comparing

# Counters and dicts whose order the report keeps (and tally.c gives)
ORDERED = ("stacks", "sampled", "events", "duplicate_kinds", "sample_rates",
           "fired")


def state(tally):
    """Every Tally field; ordered dicts as lists of items; the log as its
    events, its keys in index order, its length and first and last
    times."""
    out = dict(vars(tally))
    log = out.pop("log")
    out["log"] = list(log)
    out["log.keys"] = list(log.keys)
    out["log.len"] = len(log)
    out["log.times"] = (log.first_time(), log.last_time())
    for name in ORDERED:
        out[name] = list(out[name].items())
    out["received"] = [(pid, list(c.items()))
                       for pid, c in out["received"].items()]
    for name in ("_last_time", "_sample_phase", "_first_sample_phase"):
        out[name] = dict(out[name])
    return out


def differences(python, c):
    """['FIELD: python VALUE != c VALUE'] (the log: its first differing
    event)."""
    out = []
    for name in sorted(set(python) | set(c)):
        a, b = python.get(name), c.get(name)
        if a == b:
            continue
        if name == "log":
            i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                     min(len(a), len(b)))
            out.append("log[%d] of %d/%d: python %.300r != c %.300r"
                       % (i, len(a), len(b), a[i] if i < len(a) else None,
                          b[i] if i < len(b) else None))
        else:
            out.append("%s: python %.400r != c %.400r" % (name, a, b))
    return out


def summary(tally, events):
    """What the rules did, for the test's checks that each ran."""
    return {
        "events": dict(tally.events),
        "duplicates": dict(tally.duplicate_kinds),
        "malformed": tally.malformed, "padding": tally.padding,
        "filtered": tally.filtered, "no_callchain": tally.no_callchain,
        "stacks": len(tally.stacks), "sampled": len(tally.sampled),
        "tags": sorted({tag for _, tag in tally.keys()}),
        "max_bytes": max([e.bytes for e in tally.stacks.values()] or [0]),
        "frees": list(tally.frees),
        "rates": dict(tally.sample_rates),
        "phases": tally.phases_from_samples,
        "weight_gcd": tally.weight_gcd,
        "fired": {pid: list(v) for pid, v in tally.fired.items()},
        "received": {pid: dict(c) for pid, c in tally.received.items()},
        "log_kinds": dict(collections.Counter(e[0] for e in tally.log)),
        "text_pids": sorted({e[0] for e in events}),
        "text_events": len(events),
    }


def check(item):
    """One input: {'name', 'refused' (exit 1 before any event), 'events',
    'problems': [...], 'summary': {min_size: summary}}. Runs in a worker
    process (native.run takes the signals, in a main thread only)."""
    name, path = item
    res = {"name": name, "refused": False, "problems": [], "summary": {}}
    try:
        proc = subprocess.run([READER, "--text", path],
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        res["problems"].append("--text: no answer in %d s" % TIMEOUT)
        return res
    said = [line.strip() for line in
            proc.stderr.decode("utf-8", "replace").splitlines()
            if line.strip()]
    if proc.returncode not in (0, 1):
        res["problems"].append("--text: exit %d: %s"
                               % (proc.returncode, " | ".join(said[:3])))
        return res
    try:
        events = parse_text(proc.stdout)
    except ValueError as e:
        res["problems"].append("--text: %s" % e)
        return res
    res["events"] = len(events)
    res["rc"] = proc.returncode
    if proc.returncode == 1 and not events:
        res["refused"] = True
        return res
    values = read_events(events)
    for min_size in MIN_SIZES[:1] if HEAVY.search(name) else MIN_SIZES:
        python = oracle(values, min_size)
        result = native.run(READER, path, Tally(min_size))
        c = state(result.tally)
        log_file = getattr(result.tally.log, "_file", None)
        if log_file is not None:
            log_file.close()
        if result.read_errors != said:
            res["problems"].append(
                "min_size %d: the reader said %r, its --text run %r"
                % (min_size, result.read_errors, said))
        res["problems"] += ["min_size %d: %s" % (min_size, d)
                            for d in differences(state(python), c)]
        res["summary"][min_size] = summary(python, events)
    return res


def check_all(items):
    """check() on each (name, path), in worker processes."""
    items = sorted(items, key=lambda i: -os.path.getsize(i[1]))
    ctx = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(
            max(2, os.cpu_count() or 2), mp_context=ctx) as ex:
        return {r["name"]: r for r in ex.map(check, items)}


# ------------------------------------------------------------ variants

FMT_HEAD = re.compile(rb"name: ([^\n]*)\nID: (\d+)\n")
FMT_FIELD = re.compile(rb"\tfield:[^;\n]*?(\w+)(?:\[[^\]\n]*\])?;\toffset:"
                       rb"(\d+);\tsize:(\d+);\tsigned:(\d+);")


class Recording:
    """An uncompressed seed as mutate.PerfData, with its tracepoint
    formats read from the file (not assumed): which event each sample
    is, and where its fields lie in its raw data."""

    def __init__(self, raw):
        self.pd = mutate.PerfData(raw)
        td = self.pd.features[mutate.FEAT_TRACING_DATA]
        self.formats = {}   # id -> (name, {field: (offset, size, signed)})
        for m in FMT_HEAD.finditer(td):
            n = mutate.u64(td, m.start() - 8)   # the text's length
            text = td[m.start():m.start() + n]
            self.formats[int(m.group(2))] = (m.group(1).decode(), {
                f.group(1).decode(): tuple(int(x) for x in f.groups()[1:])
                for f in FMT_FIELD.finditer(text)})

    def event(self, rec):
        """(event name as the format has it, its fields) of a sample."""
        config = mutate.u64(self.pd.attr_of(rec).body, 8)
        return self.formats[config]

    def samples(self, prefix):
        """[(record, its layout, its fields)] of the tracepoint samples
        of the event whose name starts with prefix ("alloc", "plain")."""
        out = []
        for i in self.pd.tracepoint_samples():
            rec = self.pd.records[i]
            name, fields = self.event(rec)
            if name.startswith(prefix):
                out.append((rec, self.pd.sample_layout(rec), fields))
        return out

    @staticmethod
    def get(rec, lay, field):
        off, size, _ = field
        at = lay["raw_size"] + 4 + off
        return int.from_bytes(rec[at:at + size], "little")

    @staticmethod
    def put(rec, lay, field, value):
        off, size, _ = field
        at = lay["raw_size"] + 4 + off
        rec[at:at + size] = (value & ((1 << 8 * size) - 1)).to_bytes(
            size, "little")

    def edit_format(self, prefix, old, new):
        """The format of the event named prefix...: its first old text
        replaced by new (its length fixed up)."""
        td = self.pd.features[mutate.FEAT_TRACING_DATA]
        at = td.index(b"name: " + prefix.encode())
        n = mutate.u64(td, at - 8)
        text = td[at:at + n]
        if old not in text:
            raise ValueError("%r not in the format of %r" % (old, prefix))
        text = text.replace(old, new, 1)
        self.pd.features[mutate.FEAT_TRACING_DATA] = (
            td[:at - 8] + struct.pack("<Q", len(text)) + text + td[at + n:])

    def rename_event(self, old, new):
        """An event's name in EVENT_DESC (the name the reader takes) and
        in its format: the alloc event made the sample event."""
        ed = bytearray(self.pd.features[mutate.FEAT_EVENT_DESC])
        at = ed.index(b"sdt_rt:" + old.encode())
        full = ed[at:ed.index(b"\0", at)]   # sdt_rt:alloc_PID
        grow = max(len(new) - len(old), 0)
        if any(ed[at + len(full):at + len(full) + grow + 1]):
            raise ValueError("no room for %r in EVENT_DESC" % new)
        ed[at:at + len(full) + grow + 1] = full.replace(
            old.encode(), new.encode(), 1).ljust(len(full) + grow + 1, b"\0")
        self.pd.features[mutate.FEAT_EVENT_DESC] = bytes(ed)
        self.edit_format(old, b"name: " + old.encode(),
                         b"name: " + new.encode())

    def add_fields(self, prefix, values_of):
        """u64 fields arg4.. after the last field of event prefix...:
        values_of(k, record, layout, fields) gives the k-th sample's
        values; the format gets the fields, each sample the bytes (raw
        data grown, kept so that raw_size + 4 stays 8-aligned)."""
        samples = self.samples(prefix)
        fields = samples[0][2]
        end = max(off + size for off, size, _ in fields.values())
        start = end + (-end % 8)
        nargs = max(int(f[3:]) for f in fields if f.startswith("arg"))
        count = 0
        for k, (rec, lay, flds) in enumerate(samples):
            values = values_of(k, rec, lay, flds)
            count = len(values)
            rs = lay["raw_size"]
            n = mutate.u32(rec, rs)
            raw = bytes(rec[rs + 4:rs + 4 + end]).ljust(start, b"\0")
            raw += b"".join(struct.pack("<Q", v) for v in values)
            raw += bytes(-(len(raw) + 4) % 8)
            rec[rs:rs + 4 + n] = struct.pack("<I", len(raw)) + raw
            mutate.set_size(rec)
        # the new fields' lines after the last field's line (found by its
        # name and offset)
        name, (off, _, _) = max(fields.items(), key=lambda f: f[1][0])
        td = self.pd.features[mutate.FEAT_TRACING_DATA]
        at = td.index(b"\tfield:", td.index(b"name: " + prefix.encode()))
        at = td.index(b" %s;\toffset:%d;" % (name.encode(), off), at)
        line = td[td.rindex(b"\n", 0, at) + 1:td.index(b"\n", at) + 1]
        self.edit_format(prefix, line, line + b"".join(
            b"\tfield:u64 arg%d;\toffset:%d;\tsize:8;\tsigned:0;\n"
            % (nargs + 1 + i, start + 8 * i) for i in range(count)))

    def build(self):
        return self.pd.build()


# The plain event's kinds cycled through: every firing one, then none,
# one that never fires (phase_track), a gap, and junk
KINDS = sorted(contract.PLAIN_NAMES) + [0, 8, 10, 0xff]


def set_kinds(r, kinds=KINDS):
    for k, (rec, lay, fields) in enumerate(r.samples("plain")):
        r.put(rec, lay, fields["kind"], kinds[k % len(kinds)])


def exits(r):
    """The plain samples of rt:exit."""
    return [(rec, lay, f) for rec, lay, f in r.samples("plain")
            if r.get(rec, lay, f["kind"]) == contract.PLAIN_KINDS["exit"]]


def v_dup(raw):
    """Every fifth tracepoint sample written twice (perf_mmap__push)."""
    r = Recording(raw)
    tps = r.pd.tracepoint_samples()
    for i in reversed(tps[::5]):
        r.pd.records.insert(i + 1, bytearray(r.pd.records[i]))
    return r.build()


def v_kinds(raw, rename=None):
    """The plain event's kind cycled through KINDS; rename: (old, new),
    one of its fields renamed (not there)."""
    r = Recording(raw)
    set_kinds(r)
    if rename:
        r.edit_format("plain", b" %s;\t" % rename[0],
                      b" %s;\t" % rename[1])
    return r.build()


def v_padding(raw, last=U64):
    """Every rt:exit's counts 2^64-1 (the last one: last)."""
    r = Recording(raw)
    for rec, lay, f in exits(r):
        for name in contract.PLAIN_FIELDS:
            r.put(rec, lay, f[name], U64)
        r.put(rec, lay, f[contract.PLAIN_FIELDS[-1]], last)
    return r.build()


def v_sample(raw, extra=3):
    """The alloc event made rt:sample: weights (0: a phase mark, 1, huge,
    odd), rates and phases cycled; some sizes 0 and 3. extra: its
    arguments past arg3 (1: an older header, no rate nor phase)."""
    r = Recording(raw)
    weights = (lambda s: 3 * s, lambda s: 0, lambda s: 4096, lambda s: 1,
               lambda s: U64, lambda s: 7, lambda s: (1 << 53) + 1,
               lambda s: s)
    rates = (4096, 0, 1 << 20)
    phases = (0, 1, 1, 2, 0, 3, 3)

    def values(k, rec, lay, f):
        if k % 7 == 3:
            r.put(rec, lay, f["arg2"], 0)
        elif k % 11 == 5:
            r.put(rec, lay, f["arg2"], 3)
        size = r.get(rec, lay, f["arg2"])
        return (weights[k % len(weights)](size) & U64, rates[k % 3],
                phases[k % len(phases)])[:extra]
    r.add_fields("alloc", values)
    r.rename_event("alloc", "sample")
    return r.build()


def v_no_field(raw, event, old, new):
    """A field of event renamed in its format (old to new): not there."""
    r = Recording(raw)
    r.edit_format(event, old, new)
    return r.build()


def v_signed(raw):
    """The plain event's kind and the alloc's tag signed fields (perf
    sign-extends them), some of them negative."""
    r = Recording(raw)
    for k, (rec, lay, f) in enumerate(r.samples("plain")):
        if k % 4 == 1:
            r.put(rec, lay, f["kind"], (0x81, 0xff, 0x80)[k % 3])
    for k, (rec, lay, f) in enumerate(r.samples("alloc")):
        if k % 3 == 1:
            r.put(rec, lay, f["arg3"], (0x80000001, U64)[k % 2])
    for event, field in (("plain", "kind"), ("alloc", "arg3")):
        off, size, _ = r.samples(event)[0][2][field]
        old = b" %s;\toffset:%d;\tsize:%d;\tsigned:0;" % (
            field.encode(), off, size)
        r.edit_format(event, old, old[:-2] + b"1;")
    return r.build()


OTHER_PID = 4242


def v_pids(raw):
    """The later half of the samples of each thread from another process
    id: the thread's process stays the first one seen."""
    r = Recording(raw)
    by_tid = collections.defaultdict(list)
    for i in r.pd.tracepoint_samples():
        rec = r.pd.records[i]
        lay = r.pd.sample_layout(rec)
        by_tid[mutate.u32(rec, lay["tid"] + 4)].append((rec, lay))
    for recs in by_tid.values():
        for rec, lay in recs[len(recs) // 2:]:
            struct.pack_into("<I", rec, lay["tid"], OTHER_PID)
    return r.build()


def v_huge(raw):
    """Sizes near 2^64: the sums of bytes pass 2^64."""
    r = Recording(raw)
    for k, (rec, lay, f) in enumerate(r.samples("alloc")):
        r.put(rec, lay, f["arg2"], U64 - k)
    for rec, lay, f in r.samples("plain"):
        if r.get(rec, lay, f["kind"]) == contract.PLAIN_KINDS["free"]:
            r.put(rec, lay, f["b"], U64)
    return r.build()


def variants(seeds):
    """{name: bytes}: the semantic variants."""
    basic, threads = seeds["basic"], seeds["threads"]
    return {
        "dup": v_dup(basic),
        "dup-threads": v_dup(threads),
        "kinds": v_kinds(basic),
        "kinds-threads": v_kinds(threads),
        # rt:exit without its third count: malformed; without its
        # eighth: seven counts
        "kinds-no_c": v_kinds(basic, (b"c", b"x")),
        "kinds-no_h": v_kinds(basic, (b"h", b"x")),
        "padding": v_padding(basic),
        # not padding: real exits, their counts summed past 2^64
        "padding-not_quite": v_padding(basic, 0),
        "sample": v_sample(basic),
        "sample-threads": v_sample(threads),
        "sample-no_rate": v_sample(basic, 1),
        "sample-no_phase": v_sample(basic, 2),
        "alloc-no_arg2": v_no_field(basic, "alloc", b" arg2;\t",
                                    b" argx;\t"),
        "plain-no_kind": v_no_field(basic, "plain", b" kind;\t",
                                    b" kinx;\t"),
        "signed": v_signed(basic),
        "pids": v_pids(threads),
        "huge": v_huge(basic),
    }


# ------------------------------------------------------------ the tests

class NativeTallyTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="allocsites-tally-")
        cls.seeds = mutate.load_seeds()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        if not os.access(READER, os.X_OK):
            self.skipTest("%s is not built (make)" % READER)

    def write(self, name, data):
        path = os.path.join(self.tmp.name, name + ".data")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def agree(self, results):
        """Every input's C tally the oracle's (a subtest: the checks
        that the rules ran go on)."""
        with self.subTest("the C tally is the Python tally"):
            problems = ["%s: %s" % (name, p)
                        for name, r in sorted(results.items())
                        for p in r["problems"]]
            if problems:
                self.fail("%d difference(s):\n%s" % (
                    len(problems), "\n".join(problems[:40])))

    def test_seeds_and_mutants(self):
        items = [(name, os.path.join(mutate.SEEDS, name + ".data"))
                 for name in self.seeds]
        # no FIFO: a mapping that names one waits for a writer
        for name, data, _ in mutate.mutants(self.seeds, fifo=None):
            items.append((name, self.write(name, data)))
        results = check_all(items)
        self.agree(results)
        compared = [r for r in results.values() if not r["refused"]]
        for name in self.seeds:
            self.assertFalse(results[name]["refused"], name)
            self.assertGreater(results[name]["events"], 0, name)
        # most mutants are read, at least in part
        self.assertGreater(len(compared), len(items) // 2)
        self.assertGreater(sum(r["events"] for r in compared), 4 * 10 ** 4)
        s = [r["summary"] for r in compared if r["summary"]]
        self.assertGreater(len(s), len(items) // 2)
        self.assertTrue(any(x.get(64, {}).get("filtered") for x in s))
        for what in ("padding", "malformed", "no_callchain", "duplicates"):
            self.assertTrue(any(x[0][what] for x in s), what)

    def test_semantic_variants(self):
        made = variants(self.seeds)
        results = check_all([(name, self.write("variant-" + name, data))
                             for name, data in made.items()])
        self.agree(results)
        for name, r in results.items():
            self.assertFalse(r["refused"], name)
            self.assertTrue(r["summary"], name)
        s = {name: r["summary"][0] for name, r in results.items()}

        # each rule ran: the oracle's figures (which the C tally's equal)
        with self.subTest("duplicates"):
            for name in ("dup", "dup-threads"):
                self.assertGreaterEqual(len(s[name]["duplicates"]), 2, name)
        with self.subTest("every plain kind, and none"):
            for name in ("kinds", "kinds-threads", "kinds-no_h"):
                for kind in contract.PLAIN_NAMES.values():
                    self.assertGreater(s[name]["events"].get(kind, 0), 0,
                                       (name, kind))
                    self.assertGreater(s[name]["log_kinds"].get(kind, 0),
                                       0, (name, kind))
                self.assertGreater(s[name]["malformed"], 0, name)
            # rt:exit without its third count: malformed; without its
            # eighth: seven counts
            self.assertEqual(s["kinds-no_c"]["events"].get("exit", 0), 0)
            self.assertGreater(s["kinds-no_c"]["events"]["free"], 0)
            self.assertEqual(
                {len(v) for v in s["kinds-no_h"]["fired"].values()}, {7})
            self.assertEqual(
                {len(v) for v in s["kinds"]["fired"].values()}, {8})
        with self.subTest("exit padding"):
            self.assertEqual(s["padding"]["events"].get("exit", 0), 0)
            self.assertGreater(s["padding"]["padding"], 1)
            self.assertEqual(s["padding-not_quite"]["padding"], 0)
            self.assertEqual(s["padding-not_quite"]["events"]["exit"],
                             s["padding"]["padding"])
        with self.subTest("rt:sample"):
            for name in ("sample", "sample-threads", "sample-no_phase",
                         "sample-no_rate"):
                x = s[name]
                self.assertGreater(x["sampled"], 0, name)
                self.assertEqual(x["stacks"], 0, name)
                self.assertGreater(x["weight_gcd"], 0, name)
                # phase marks (weight 0): received, not counted as events
                received = sum(c.get("sample", 0)
                               for c in x["received"].values())
                self.assertGreater(received, x["events"]["sample"], name)
            for name in ("sample", "sample-threads"):
                x = s[name]
                self.assertTrue(x["phases"], name)
                self.assertGreater(x["log_kinds"].get("phase_begin", 0), 0)
                self.assertGreater(x["log_kinds"].get("phase_end", 0), 0)
                self.assertGreaterEqual(len(x["rates"]), 3, name)
            self.assertEqual(list(s["sample-no_rate"]["rates"]), [None])
            self.assertFalse(s["sample-no_rate"]["phases"])
            self.assertFalse(s["sample-no_phase"]["phases"])
            self.assertNotIn(None, s["sample-no_phase"]["rates"])
        with self.subTest("missing fields"):
            for name in ("alloc-no_arg2", "plain-no_kind"):
                self.assertGreater(s[name]["malformed"], 0, name)
            self.assertEqual(s["alloc-no_arg2"]["stacks"], 0)
            self.assertEqual(s["plain-no_kind"]["events"].get("free", 0), 0)
        with self.subTest("signed fields"):
            self.assertIn(0x80000001, s["signed"]["tags"])
            self.assertIn(0xffffffff, s["signed"]["tags"])
            self.assertGreater(s["signed"]["malformed"], 0)
        with self.subTest("a thread's process: the first one seen"):
            self.assertIn(OTHER_PID, s["pids"]["text_pids"])
            self.assertNotIn(OTHER_PID, s["pids"]["received"])
        with self.subTest("sums past 2^64"):
            self.assertGreater(s["huge"]["max_bytes"], U64)
            self.assertGreater(s["huge"]["frees"][1], U64)
        with self.subTest("min_size"):
            for name, r in results.items():
                if name not in ("huge", "alloc-no_arg2"):
                    self.assertGreater(r["summary"][64]["filtered"], 0, name)


if __name__ == "__main__":
    unittest.main()
