import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

from allocsites_lib.analyze import completeness
from allocsites_lib.read import parse
from allocsites_lib.read.tally import Tally

from fixtures import alloc, exit_event, sample


class VerdictTest(unittest.TestCase):
    def v(self, received, fired, **kw):
        return completeness.verdict(received, fired, **kw)

    def test_equal_counts_are_complete(self):
        got = self.v({7: {"alloc": 5}, 8: {"alloc": 2}}, {7: [5, 0, 0], 8: [2, 0, 0]})
        self.assertIs(got.complete, True)
        self.assertEqual((got.fired, got.received, got.missing), (
            {"alloc": 7, "free": 0, "sample": 0}, {"alloc": 7, "free": 0, "sample": 0}, 0))

    def test_missing_events_of_one_process(self):
        got = self.v({7: {"alloc": 5}, 8: {"alloc": 1}}, {7: [5, 0, 0], 8: [3, 0, 0]})
        self.assertIs(got.complete, False)
        self.assertEqual(got.missing, 2)
        self.assertEqual(got.reason, "2 events missing: the program fired 8, the recording "
                                     "has 6")

    def test_a_process_that_sent_nothing_at_all(self):
        # perf stopped reading before any of process 8's events.
        got = self.v({7: {"alloc": 5}}, {7: [5, 0, 0], 8: [4, 1, 0]})
        self.assertEqual((got.complete, got.missing), (False, 5))

    def test_extra_events_are_not_a_pass(self):
        got = self.v({7: {"alloc": 6}}, {7: [5, 0, 0]})
        self.assertIsNone(got.complete)
        self.assertIn("1 more events than the program counted", got.reason)

    def test_extra_events_with_one_probe_recorded_twice_say_so(self):
        # perf probe run twice on one binary, both events recorded: each
        # allocation twice (by hand, t_basic: 6244 of 3122)
        got = self.v({7: {"alloc": 10}}, {7: [5, 0, 0]},
                     shared_kinds=(("sdt_rt:alloc", "sdt_rt:alloc_1"),))
        self.assertIsNone(got.complete)
        self.assertEqual(got.reason, (
            "5 more events than the program counted: the recording has "
            "several events of one probe (sdt_rt:alloc, sdt_rt:alloc_1), "
            "and where they are on the same one each hit is recorded once "
            "per event; record one event a probe and binary"))
        # several events, and as many hits as fired: nothing to say
        self.assertIs(self.v({7: {"alloc": 5}}, {7: [5, 0, 0]},
                             shared_kinds=(("a", "b"),)).complete, True)

    def test_shared_kinds_from_the_event_names(self):
        from allocsites_lib.analyze import facts
        self.assertEqual(facts.shared_kinds(
            {"sdt_rt:alloc": 3, "sdt_rt:alloc_1": 3, "sdt_rt:free": 3,
             "sdt_rt:plain_12": 6, "sdt_rt:plain_13": 1, "cycles": 9}),
            (("sdt_rt:alloc", "sdt_rt:alloc_1"),))
        # an event that recorded nothing is not one of them
        self.assertEqual(facts.shared_kinds(
            {"sdt_rt:alloc": 3, "sdt_rt:alloc_1": 0}), ())

    def test_process_without_exit_is_unchecked(self):
        got = self.v({7: {"alloc": 5}, 9: {"alloc": 3}}, {7: [5, 0, 0]})
        self.assertIsNone(got.complete)
        self.assertEqual(got.unchecked, 3)
        self.assertTrue(got.reason.startswith("3 events of 1 process without an rt:exit"))

    def test_no_exit_at_all(self):
        got = self.v({7: {"alloc": 5}}, {}, lost=0)
        self.assertIsNone(got.complete)
        self.assertTrue(got.reason.startswith("no rt:exit event"))

    def test_no_exit_at_all_but_something_unseen(self):
        # a file whose probes never fired sent no rt:exit either: the
        # reason names the file, not only the missing rt:exit
        line = "/p: the kernel raises its rt probes' semaphores elsewhere"
        got = self.v({}, {}, unseen=[line])
        self.assertIsNone(got.complete)
        self.assertEqual(got.reason, line)
        self.assertEqual(completeness.unseen(stuck=[line]), [line])

    def test_evidence_of_loss_wins_over_a_matching_count(self):
        for kw, reason in (({"lost": 3}, "perf lost 3 samples while recording"),
                           ({"malformed": 2}, "2 events could not be decoded"),
                           ({"read_errors": ["Couldn't decompress data"]},
                            "perf could not read the whole recording: Couldn't "
                            "decompress data"),
                           ({"interrupted": True}, "the report was interrupted before "
                                                   "the end of the recording")):
            got = self.v({7: {"alloc": 5}}, {7: [5, 0, 0]}, **kw)
            self.assertEqual((got.complete, got.reason), (False, reason))

    def test_sampled_and_free_counts_compared_too(self):
        got = self.v({7: {"sample": 4, "free": 9}}, {7: [0, 10, 4]})
        self.assertEqual((got.complete, got.missing), (False, 1))


class RunningTest(unittest.TestCase):
    """Processes the recording saw start and not end (no EXIT record)."""

    def test_one_without_its_exit_event_is_unseen(self):
        # a daemon: it allocated after the recording ended
        got = completeness.verdict({7: {"alloc": 5}}, {7: [5, 0, 0]},
                                   running=(9,))
        self.assertIsNone(got.complete)
        self.assertTrue(got.reason.startswith(
            "process 9 still running when the recording ended"), got.reason)

    def test_one_that_sent_its_exit_event_is_checked_by_it(self):
        # its EXIT record did not reach the file, but its rt:exit did, and
        # its counts match: nothing of it is missing
        got = completeness.verdict({7: {"alloc": 5}, 9: {"alloc": 1}},
                                   {7: [5, 0, 0], 9: [1, 0, 0]},
                                   running=(9,))
        self.assertIs(got.complete, True, got.reason)
        # and when its counts do not match, that is said, not "running"
        got = completeness.verdict({7: {"alloc": 5}, 9: {"alloc": 1}},
                                   {7: [5, 0, 0], 9: [2, 0, 0]},
                                   running=(9,))
        self.assertIs(got.complete, False)
        self.assertIn("1 events missing", got.reason)

    def test_the_running_line_comes_before_the_others(self):
        got = completeness.verdict({7: {"alloc": 5}}, {7: [5, 0, 0]},
                                   running=(8, 9), unseen=["lib.so ran"])
        self.assertIsNone(got.complete)
        self.assertRegex(got.reason, r"^processes 8, 9 still running .*; "
                                     r"lib\.so ran$")


class TallyCountsTest(unittest.TestCase):
    def test_received_per_process_and_fired_summed_over_elf_files(self):
        t = Tally(min_size=100)
        t.add(alloc([], 8, pid=7))        # under --min-size: still received
        t.add(alloc([], 800, pid=7))
        t.add(alloc([], 800, pid=8))
        t.add(exit_event(1, pid=7))       # the executable's rt:exit
        t.add(exit_event(1, 2, pid=7))    # a library's rt:exit, same process
        self.assertEqual(t.received, {7: {"alloc": 2}, 8: {"alloc": 1}})
        self.assertEqual(t.fired, {7: [2, 2, 0]})
        self.assertEqual(t.events["exit"], 2)


class ParseExitTest(unittest.TestCase):
    def test_exit_event(self):
        e = parse.event_from_perf("sdt_rt__exit_1", {"arg1": 10, "arg2": 4, "arg3": 0},
                                  sample([]))
        self.assertEqual((e.kind, e.pid, e.counts), ("exit", 42, (10, 4, 0)))

    def test_exit_event_missing_an_argument_is_malformed(self):
        self.assertIsNone(parse.event_from_perf("sdt_rt__exit", {"arg1": 10, "arg2": 4},
                                                sample([])))

    def test_end_of_unwind_marker_is_not_a_frame(self):
        # perf's callchain of a stack copy that ran out ends in ip -1.
        chain = [{"ip": 0x1010, "sym": {"start": 0x1000, "name": "f"}, "sym_off": 0x10,
                  "dso": "/bin/app"},
                 {"ip": 0xffffffffffffffff, "dso": "[unknown]"}]
        frames = parse.raw_frames(chain)
        self.assertEqual([f.sym for f in frames], ["f"])


if __name__ == "__main__":
    unittest.main()


class TailCutTest(unittest.TestCase):
    """perf 6.1 -z cut the recording's last compressed record short."""

    def test_complete_when_the_count_proves_nothing_was_ours(self):
        v = completeness.verdict({1: {"alloc": 5}}, {1: [5, 0, 0]},
                                 tail_cut=True)
        self.assertIs(v.complete, True)
        self.assertIn("cut the recording's last compressed record short",
                      v.reason)

    def test_incomplete_when_events_are_missing(self):
        v = completeness.verdict({1: {"alloc": 4}}, {1: [5, 0, 0]},
                                 tail_cut=True)
        self.assertIs(v.complete, False)
        self.assertIn("1 events missing", v.reason)
        self.assertIn("cut short", v.reason)

    def test_incomplete_when_nothing_can_check_it(self):
        for received, fired in (({1: {"alloc": 5}}, {}),
                                ({1: {"alloc": 5}, 2: {"alloc": 1}},
                                 {1: [5, 0, 0]})):
            with self.subTest(fired=fired):
                v = completeness.verdict(received, fired, tail_cut=True)
                self.assertIs(v.complete, False)
                self.assertIn("cannot be checked", v.reason)
