"""scripts/dlfilter/allocsites_mailbox.c (the report workers' perf
dlfilter) and allocsites_lib/read/mailbox.py (its reader), without perf: the
built filter is loaded here with ctypes and given samples shaped as
perf's struct perf_dlfilter_sample, as perf would call it."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import ctypes
import struct

from allocsites_lib.read import mailbox

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
LIBRARY = os.path.join(BUILD, "allocsites_mailbox.so")
HEADER = "/usr/include/perf/perf_dlfilter.h"

U64, S32, U32, U16, U8 = (ctypes.c_uint64, ctypes.c_int32, ctypes.c_uint32,
                          ctypes.c_uint16, ctypes.c_uint8)


class Sample(ctypes.Structure):
    """struct perf_dlfilter_sample of <perf/perf_dlfilter.h> (perf 6.1)."""
    _fields_ = [("size", U32), ("ins_lat", U16), ("p_stage_cyc", U16),
                ("ip", U64), ("pid", S32), ("tid", S32), ("time", U64),
                ("addr", U64), ("id", U64), ("stream_id", U64),
                ("period", U64), ("weight", U64), ("transaction", U64),
                ("insn_cnt", U64), ("cyc_cnt", U64), ("cpu", S32),
                ("flags", U32), ("data_src", U64), ("phys_addr", U64),
                ("data_page_size", U64), ("code_page_size", U64),
                ("cgroup", U64), ("cpumode", U8),
                ("addr_correlates_sym", U8), ("misc", U16),
                ("raw_size", U32), ("raw_data", ctypes.c_void_p),
                ("brstack_nr", U64), ("brstack", ctypes.c_void_p),
                ("raw_callchain_nr", U64), ("raw_callchain", ctypes.c_void_p),
                ("event", ctypes.c_char_p), ("machine_pid", S32),
                ("vcpu", S32)]


def raw_plain(kind, args):
    """A uprobe plain event's raw data as the kernel packs it: the common
    fields (8), the probe's ip (8), kind (u8), a..h (u64, unaligned)."""
    return struct.pack("<HBBiQB8Q", 1234, 0, 0, 77, 0x401000, kind,
                       *args) + b"\0\0\0"


@unittest.skipUnless(os.path.exists(HEADER),
                     "no perf dlfilter header: the filter is not built")
class MailboxTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(LIBRARY):
            raise AssertionError("%s is not built: run make" % LIBRARY)
        cls.lib = ctypes.CDLL(LIBRARY)
        cls.lib.filter_event_early.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(Sample), ctypes.c_void_p]
        cls.box = mailbox.Mailbox(LIBRARY)   # the same instance (NOLOAD)

    def setUp(self):
        self.set("allocsites_mailbox_state", mailbox.VERIFY)
        self.set("allocsites_mailbox_n", 0)
        self.set("allocsites_mailbox_stop_at", 0)
        self.keep = []

    def set(self, name, value):
        U64.in_dll(self.lib, name).value = value

    def fire(self, event, time=10**9 + 5, tid=77, kind=1, args=None,
             raw=None):
        args = args or [0x5000, 48, 2, 0, 0, 0, 0, 9]
        raw = raw if raw is not None else raw_plain(kind, args)
        buf = ctypes.create_string_buffer(raw, len(raw))
        self.keep.append(buf)
        s = Sample(size=ctypes.sizeof(Sample), tid=tid, pid=70, time=time,
                   raw_size=len(raw), raw_data=ctypes.addressof(buf),
                   event=event)
        return self.lib.filter_event_early(None, ctypes.byref(s), None)

    def test_verify_then_buffer(self):
        # VERIFY: perf keeps the event; the filter's copy is checked.
        self.assertEqual(self.fire(b"sdt_rt:plain_9", kind=1), 0)
        self.assertEqual(self.box.pending(), 0)
        fields = {"common_s": 1, "common_ns": 5, "common_pid": 77,
                  "kind": 1, "a": 0x5000, "b": 48, "c": 2, "d": 0, "e": 0,
                  "f": 0, "g": 0, "h": 9}
        self.assertTrue(self.box.verify("sdt_rt:plain_9", fields))
        self.assertEqual(self.box.state(), mailbox.ON)
        # ON: plain events are buffered and dropped, others kept.
        self.assertEqual(self.fire(b"sdt_rt:plain_9", time=2 * 10**9,
                                   kind=5, args=[3, 0, 0, 0, 0, 0, 0, 0]), 1)
        self.assertEqual(self.fire(b"sdt_rt:alloc_9", time=3 * 10**9), 0)
        self.assertEqual(self.fire(b"sdt_rt:plain_9", time=4 * 10**9,
                                   args=[(1 << 64) - 1] * 8), 1)
        self.assertEqual(self.box.take(), [
            (2 * 10**9, 77, 5, 3, 0, 0, 0, 0, 0, 0, 0),
            (4 * 10**9, 77, 1) + ((1 << 64) - 1,) * 8])
        self.assertEqual(self.box.pending(), 0)
        self.assertEqual(self.box.take(), [])

    def test_a_different_reading_turns_it_off(self):
        self.fire(b"sdt_rt:plain_9", kind=1)
        fields = {"common_s": 1, "common_ns": 5, "common_pid": 77,
                  "kind": 1, "a": 0x5001, "b": 48, "c": 2, "d": 0, "e": 0,
                  "f": 0, "g": 0, "h": 9}
        self.assertFalse(self.box.verify("sdt_rt:plain_9", fields))
        self.assertEqual(self.box.state(), mailbox.OFF)
        self.assertFalse(self.box.verify("sdt_rt:plain_9", {}))
        self.assertEqual(self.fire(b"sdt_rt:plain_9"), 0)   # never again
        self.assertEqual(self.box.pending(), 0)

    def test_kept_for_perf(self):
        self.set("allocsites_mailbox_state", mailbox.ON)
        # too short to be the plain event's layout
        self.assertEqual(self.fire(b"sdt_rt:plain_9", raw=b"\0" * 40), 0)
        # not a plain event
        self.assertEqual(self.fire(b"sdt_rt:sample_9"), 0)
        # the buffer is full: perf hands it over, the handler empties it
        self.set("allocsites_mailbox_n", self.box.cap)
        self.assertEqual(self.fire(b"sdt_rt:plain_9"), 0)
        self.set("allocsites_mailbox_n", 0)
        # the sample that completes the worker's count (--dlarg N) is
        # handed over, so the handler sees it and stops reading
        seen = U64.in_dll(self.lib, "allocsites_mailbox_seen").value
        self.set("allocsites_mailbox_stop_at", seen + 3)
        self.assertEqual([self.fire(b"sdt_rt:plain_9") for _ in range(4)],
                         [1, 1, 0, 1])

    def test_fields_of(self):
        rec = (3 * 10**9 + 7, 12, 5, 4, 0, 0, 0, 0, 0, 0, 0)
        f = mailbox.fields_of(rec)
        self.assertEqual((f["common_pid"], f["common_s"], f["common_ns"]),
                         (12, 3, 7))
        self.assertEqual([f[k] for k in "kind a b c d e f g h".split()],
                         list(rec[2:]))


if __name__ == "__main__":
    unittest.main()
