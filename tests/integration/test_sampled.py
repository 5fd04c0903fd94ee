"""Sampled mode under real perf: estimates against each program's truth.

The seed is fixed (RT_SAMPLE_SEED), so every run draws the same samples;
the bounds are 4 standard errors of the Poisson model (docs/sampling.md),
so a correct sampler fails one site in ~16000 seeds and a biased one (a
periodic threshold, a wrong weight, lost multiplicity) fails outright."""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ProfileTest, program, report_sites, truth_sites  # noqa: E402

R = 65536
SEED = "12345"


class SampledProfiles(ProfileTest):

    def sampled(self, prog, args, rate=R, seed=SEED):
        env = {"RT_SAMPLE_SEED": seed}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            report, truth, rec, rep = self.profile(
                prog, args, record_args=["--sample", str(rate)])
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k)
                else:
                    os.environ[k] = v
        self.assertLossless(report)
        self.assertEqual(report["mode"], "sampled")
        self.assertEqual(report["sample_bytes"], rate)
        self.assertIn("recorded", rec.stderr)
        return report, truth, rep

    def assertWithinBounds(self, report, truth, sites=None):
        got = report_sites(report)
        for key, (count, nbytes, _tags) in truth_sites(truth).items():
            if sites is not None and key[2] not in sites:
                continue
            size = nbytes / count           # one size per site (t_sampled)
            est_count, est_bytes, _ = got.get(key, (0.0, 0.0, {}))
            sigma_b = math.sqrt(R * nbytes)
            sigma_c = math.sqrt(R * count / size)
            self.assertLessEqual(abs(est_bytes - nbytes), 4 * sigma_b,
                                 "%s: bytes %.0f estimated, %d true, 4 sigma "
                                 "= %.0f" % (key, est_bytes, nbytes, 4 * sigma_b))
            self.assertLessEqual(abs(est_count - count), 4 * sigma_c,
                                 "%s: count %.1f estimated, %d true" %
                                 (key, est_count, count))

    def test_estimates_within_statistical_bounds(self):
        report, truth, rep = self.sampled(program("t_sampled"), ["10"])
        self.assertWithinBounds(report, truth)
        # Every site is big enough to be seen at R = 64 KiB.
        self.assertEqual(len(report["sites"]), 4)
        # The report's error bounds, which a user reads as "how far off can
        # this be", are within 2x of the true standard errors (from the
        # program's truth, not from the report's own estimates).
        truth_by_site = truth_sites(truth)
        for site in report["sites"]:
            count, nbytes, _ = truth_by_site[(site["file"], site["line"],
                                              site["function"])]
            true_bytes_error = math.sqrt(R * nbytes)
            true_count_error = math.sqrt(R * count * count / nbytes)
            self.assertGreater(site["bytes_error"], true_bytes_error / 2)
            self.assertLess(site["bytes_error"], true_bytes_error * 2)
            self.assertGreater(site["count_error"], true_count_error / 2)
            self.assertLess(site["count_error"], true_count_error * 2)
        self.assertIn("estimates from", rep.stdout)
        self.assertIn("~bytes", rep.stdout)

    def test_interleaved_sizes_show_no_skew(self):
        # 512 and 3584 bytes alternate in a 4096-byte period: a periodic
        # threshold would give one of the two sites every sample.
        report, truth, _ = self.sampled(program("t_sampled"), ["10"])
        self.assertWithinBounds(report, truth, sites={"interleaved"})
        got = [s for s in report["sites"] if s["function"] == "interleaved"]
        self.assertEqual(len(got), 2)
        ratio = got[0]["bytes"] / got[1]["bytes"]
        self.assertGreater(ratio, 3584 / 512 * 0.6)
        self.assertLess(ratio, 3584 / 512 / 0.6)

    def test_rate_one_byte_is_exact(self):
        report, truth, _ = self.sampled(program("t_basic"), ["300"], rate=1)
        self.assertMatchesTruth(report, truth)

    def test_rate_one_byte_without_one_byte_allocations(self):
        # Every size here is a multiple of 64: R guessed from the weights
        # would be 64 (and bytes_error 202 for ten 64-byte blocks). The
        # rate travels in the event, and at R = 1 the error is 0.
        report, truth, _ = self.sampled(program("t_sampled"), ["1"], rate=1)
        self.assertMatchesTruth(report, truth)
        for site in report["sites"]:
            self.assertEqual((site["bytes_error"], site["count_error"]),
                             (0, 0), site)

    def test_fixed_seed_reproduces_the_samples(self):
        first, _, _ = self.sampled(program("t_sampled"), ["2"])
        second, _, _ = self.sampled(program("t_sampled"), ["2"])
        self.assertEqual(report_sites(first), report_sites(second))
        third, _, _ = self.sampled(program("t_sampled"), ["2"], seed="999")
        self.assertNotEqual(report_sites(first), report_sites(third))


if __name__ == "__main__":
    unittest.main()


LIVE_SCALE = 5


class SampledLiveness(ProfileTest):
    """In-use estimates from rt:sample and rt:sample_free (the header's
    pointer table): within 4 standard errors of the truth, exact where
    the truth is 0 (a freed sampled block is always seen freed)."""

    sampled = SampledProfiles.sampled

    def test_peak_and_leaked_within_bounds(self):
        report, truth, rep = self.sampled(program("t_sampled_live"),
                                          [str(LIVE_SCALE)])
        live = report["liveness"]
        self.assertIsNotNone(live, "sample_free was not recorded")
        self.assertEqual(live["untracked"], 0)
        self.assertIsNone(live["temporary"])   # exact mode only
        want = {(r["file"], r["line"], r["function"]): r
                for r in truth["records"]}
        self.assertEqual(set(want), {(s["file"], s["line"], s["function"])
                                     for s in report["sites"]})
        for site in report["sites"]:
            t = want[(site["file"], site["line"], site["function"])]
            for field in ("peak_bytes", "leaked_bytes"):
                with self.subTest(line=site["line"], field=field):
                    if t[field] == 0:
                        self.assertEqual(site[field], 0)
                        continue
                    sigma = math.sqrt(R * t[field])
                    self.assertLessEqual(abs(site[field] - t[field]),
                                         4 * sigma, "%.0f estimated, %d true"
                                         % (site[field], t[field]))
        for field in ("peak_bytes", "leaked_bytes"):
            sigma = math.sqrt(R * truth[field])
            self.assertLessEqual(abs(live[field] - truth[field]), 4 * sigma,
                                 "%s: %.0f estimated, %d true"
                                 % (field, live[field], truth[field]))
        self.assertIn("~", rep.stdout)
