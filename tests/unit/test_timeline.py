import math, os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from allocsites_lib.render import svg, timeline

import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
MiB = 1 << 20

# Four points 1 ms apart; the peak (4 MiB) is the third one.
TIMES = [0, 1000000, 2000000, 3000000]
SERIES = [("a<b", [0, MiB, 3 * MiB, MiB]), ("c & d", [0, MiB, MiB, 0])]
OTHER = [0, 0, 0, 512]
TOTAL = [0, 2 * MiB, 4 * MiB, MiB + 512]
PEAK = (2000000, 4 * MiB)
COMMITTED = [MiB, 3 * MiB, 5 * MiB, 5 * MiB]
PHASES = [("lex", 0, 1000000), ("parse", 500000, 2500000),
          ("emit", 1000000, 3000000)]


def render(**kw):
    args = dict(title="T", subtitle="", times=TIMES, series=SERIES,
                other=OTHER, total=TOTAL, peak=PEAK)
    args.update(kw)
    return timeline.render(**args)


def by_id(root, ident):
    return next(e for e in root.iter() if e.get("id") == ident)


def of_class(root, cls, tag="*"):
    return [e for e in root.iter(NS + tag) if e.get("class") == cls]


def points(poly):
    return [tuple(float(v) for v in p.split(","))
            for p in poly.get("points").split()]


class Plot(object):
    """The chart's scales recomputed from the plot frame and the axis
    ranges the test knows for its input."""

    def __init__(self, root, lo, hi, ymax):
        r = by_id(root, "plot")
        self.left, self.top = float(r.get("x")), float(r.get("y"))
        self.width, self.height = float(r.get("width")), float(r.get("height"))
        self.lo, self.hi, self.ymax = lo, hi, ymax

    def x(self, t):
        return self.left + (t - self.lo) / (self.hi - self.lo) * self.width

    def y(self, v):
        return self.top + self.height - v / self.ymax * self.height


def legend(root):
    return [(e.find(NS + "text[@class='v']").text,
             "".join(e.find(NS + "text[@class='l']").itertext()))
            for e in of_class(by_id(root, "legend"), "entry", "g")]


class TimelineTest(unittest.TestCase):
    def assertNear(self, a, b):
        self.assertAlmostEqual(a, b, delta=1e-4)   # coordinates: 4 decimals

    def test_well_formed_and_self_contained(self):
        doc = render(committed=COMMITTED, phases=PHASES)
        root = ET.fromstring(doc)
        self.assertEqual(root.tag, NS + "svg")
        self.assertEqual(root.get("width"), "1200")
        self.assertNotIn("href", doc)            # no external file
        self.assertEqual(len(root.findall(NS + "style")), 1)
        self.assertEqual(len(root.findall(NS + "script")), 1)
        self.assertEqual(root.get("onload"), "init(evt)")
        self.assertIn('addEventListener("mouseover"', doc)
        self.assertEqual(doc, render(committed=COMMITTED, phases=PHASES))

    def test_frame_and_axes(self):
        root = ET.fromstring(render())
        plot = by_id(root, "plot")
        # no subtitle: header 36, peak row 16 + 2, no phase rows, + 2
        self.assertEqual([plot.get(k) for k in ("x", "y", "width", "height")],
                         ["90", "56", "1090", "320"])
        # the largest value is 4 MiB: steps of 1 MiB, top 4 MiB
        self.assertEqual([t.text for t in by_id(root, "yaxis").iter(NS + "text")],
                         ["0 B", "1.0 MiB", "2.0 MiB", "3.0 MiB", "4.0 MiB"])
        self.assertEqual([t.text for t in by_id(root, "xaxis").iter(NS + "text")],
                         ["0 ms", "1 ms", "2 ms", "3 ms"])
        p = Plot(root, 0, 3000000, 4 * MiB)
        self.assertEqual([float(t.get("x")) for t in by_id(root, "xaxis").iter(NS + "text")],
                         [round(p.x(t), 4) for t in TIMES])
        self.assertEqual([float(t.get("y")) for t in by_id(root, "yaxis").iter(NS + "text")],
                         [p.y(v) + 4 for v in range(0, 5 * MiB, MiB)])

    def test_areas_stack_the_input(self):
        root = ET.fromstring(render())
        p = Plot(root, 0, 3000000, 4 * MiB)
        areas = of_class(root, "area", "polygon")
        self.assertEqual([a.get("data-label") for a in areas],
                         ["a<b", "c & d", "other sites"])
        layers = [v for _l, v in SERIES] + [OTHER]
        base = [0] * len(TIMES)
        for area, values in zip(areas, layers):
            pts = points(area)
            top = [b + v for b, v in zip(base, values)]
            # upper edge left to right, then the lower edge back
            want = [(p.x(t), p.y(v)) for t, v in zip(TIMES, top)] + \
                [(p.x(t), p.y(v)) for t, v in zip(TIMES, base)][::-1]
            self.assertEqual(len(pts), len(want))
            for (x, y), (wx, wy) in zip(pts, want):
                self.assertNear(x, wx)
                self.assertNear(y, wy)
            base = top
        self.assertEqual(base, TOTAL)
        # the top of the stack at the peak point is the peak total
        top_at_peak = points(areas[-1])[2]
        self.assertNear(top_at_peak[0], p.x(PEAK[0]))
        self.assertNear(top_at_peak[1], p.y(PEAK[1]))
        self.assertNear(top_at_peak[1], p.top)      # 4 MiB is the axis top
        self.assertEqual(len({a.get("fill") for a in areas}), 3)
        self.assertEqual(areas[-1].get("fill"), timeline.OTHER_COLOR)

    def test_legend_at_the_peak(self):
        root = ET.fromstring(render(committed=COMMITTED))
        self.assertEqual(by_id(root, "legend-head").text,
                         "Live bytes at the peak, 2.000 ms")
        self.assertEqual(legend(root),
                         [("4.0 MiB", "total"), ("3.0 MiB", "a<b"),
                          ("1.0 MiB", "c & d"), ("0 B", "other sites"),
                          ("5.0 MiB", "committed")])
        swatches = [r.get("fill") for r in of_class(root, "swatch", "rect")]
        self.assertEqual(swatches, [a.get("fill") for a in of_class(root, "area", "polygon")])

    def test_legend_peak_between_points_uses_the_nearest(self):
        root = ET.fromstring(render(peak=(2400000, 4 * MiB)))
        self.assertEqual(legend(root)[1], ("3.0 MiB", "a<b"))
        root = ET.fromstring(render(peak=(2600000, 4 * MiB)))
        self.assertEqual(legend(root)[1], ("1.0 MiB", "a<b"))

    def test_peak_marker(self):
        root = ET.fromstring(render(subtitle="s"))
        p = Plot(root, 0, 3000000, 4 * MiB)
        peak = by_id(root, "peak")
        line, dot = peak.find(NS + "line"), peak.find(NS + "circle")
        self.assertNear(float(line.get("x1")), p.x(PEAK[0]))
        self.assertEqual(line.get("x1"), line.get("x2"))
        self.assertEqual(float(line.get("y2")), p.top + p.height)
        self.assertNear(float(dot.get("cx")), p.x(PEAK[0]))
        self.assertNear(float(dot.get("cy")), p.y(PEAK[1]))
        self.assertEqual(peak.find(NS + "text").text, "peak 4.0 MiB at 2.000 ms")
        # right half of the plot: the label ends at the line
        self.assertEqual(peak.find(NS + "text").get("text-anchor"), "end")
        # an estimate: '~', times of a second or more in s
        root = ET.fromstring(render(times=[0, 1e9, 2e9, 3e9], peak=(1e9, 2.0 * MiB)))
        text = by_id(root, "peak").find(NS + "text")
        self.assertEqual(text.text, "peak ~2.0 MiB at 1.000 s")
        self.assertEqual(text.get("text-anchor"), "start")

    def test_committed_line(self):
        root = ET.fromstring(render(committed=COMMITTED))
        p = Plot(root, 0, 3000000, 5 * MiB)     # committed reaches 5 MiB
        line = by_id(root, "committed")
        self.assertEqual(line.tag, NS + "polyline")
        for (x, y), t, v in zip(points(line), TIMES, COMMITTED):
            self.assertNear(x, p.x(t))
            self.assertNear(y, p.y(v))
        doc = render()
        self.assertNotIn('id="committed"', doc)
        self.assertNotIn("committed", [l for _v, l in legend(ET.fromstring(doc))])

    def test_committed_far_above_the_live_bytes_is_clipped(self):
        # 28 KiB live under a 64 MiB reserve: the scale is the live bytes'
        # (the area is not a flat line at zero), the committed line runs
        # along the top, and a note says so (issue 21, class 8)
        KiB = 1024
        total = [0, 20 * KiB, 28 * KiB, 10 * KiB]
        series = [("a", total)]
        committed = [64 * MiB] * 4
        root = ET.fromstring(render(series=series, other=None, total=total,
                                    peak=(2000000, 28 * KiB),
                                    committed=committed))
        note = by_id(root, "committed-clipped")
        self.assertEqual(note.text, "committed bytes (up to 64.0 MiB) run "
                         "above the chart: its scale is the live bytes'")
        p = Plot(root, 0, 3000000, 1)
        ys = [y for _x, y in points(by_id(root, "committed"))]
        self.assertEqual(ys, [p.top] * 4)
        # the live area's top reaches at least half the plot's height
        area_top = min(y for poly in root.iter(NS + "polygon")
                       for _x, y in points(poly))
        self.assertLess(area_top, p.top + p.height / 2)
        # within CLIP_RATIO of the live bytes, nothing is clipped
        doc = render(committed=COMMITTED)
        self.assertNotIn("committed-clipped", doc)

    def test_phase_bands(self):
        root = ET.fromstring(render(phases=PHASES))
        plain = ET.fromstring(render())
        top, plain_top = (float(by_id(r, "plot").get("y")) for r in (root, plain))
        # lex and emit share a row (emit starts as lex ends), parse overlaps both
        self.assertEqual(top - plain_top, 2 * timeline.ROW_H)
        p = Plot(root, 0, 3000000, 4 * MiB)
        groups = of_class(by_id(root, "phases"), "phase", "g")
        self.assertEqual([g.find(NS + "text").text for g in groups], ["lex", "parse", "emit"])
        self.assertEqual([g.find(NS + "title").text for g in groups],
                         ["lex: 0.000 ms - 1.000 ms", "parse: 0.500 ms - 2.500 ms",
                          "emit: 1.000 ms - 3.000 ms"])
        tags_top = plain_top - 2      # the rows sit between the peak label and the plot
        for g, (_n, start, end), row in zip(groups, PHASES, [0, 1, 0]):
            band = g.find(NS + "rect[@class='band']")
            tag = g.find(NS + "rect[@class='tag']")
            for r in (band, tag):
                self.assertNear(float(r.get("x")), p.x(start))
                self.assertNear(float(r.get("width")), p.x(end) - p.x(start))
            self.assertEqual((float(band.get("y")), float(band.get("height"))),
                             (p.top, p.height))
            self.assertEqual(float(tag.get("y")), tags_top + row * timeline.ROW_H)
        # behind the areas: drawn first
        order = [e.get("id") for e in root if e.get("id") in ("phases", "areas")]
        self.assertEqual(order, ["phases", "areas"])

    def test_a_very_short_phase_is_named_beside_its_band(self):
        # 3 us in 3 ms: a band under a pixel wide, its name beside it
        # (issue 23, item 4)
        root = ET.fromstring(render(phases=[("blink", 1000000, 1003000)]))
        p = Plot(root, 0, 3000000, 4 * MiB)
        [g] = of_class(by_id(root, "phases"), "phase", "g")
        text = g.find(NS + "text")
        self.assertEqual(text.text, "blink")
        self.assertGreater(float(text.get("x")), p.x(1003000))

    def labels(self, root):
        """[(row y, left, right, text)] of the phase labels drawn, their
        extent estimated from the font size (FONT_W a character)."""
        out = []
        for g in of_class(by_id(root, "phases"), "phase", "g"):
            text = g.find(NS + "text")
            if text is None:
                continue
            x = float(text.get("x"))
            w = len(text.text) * svg.FONT_SIZE * svg.FONT_W
            left = x - w if text.get("text-anchor") == "end" else x
            out.append((float(text.get("y")), left, left + w, text.text))
        return out

    def assertNoLabelsOverlap(self, labels):
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                if a[0] == b[0]:
                    self.assertTrue(a[2] <= b[1] or b[2] <= a[1],
                                    "labels overlap: %r and %r" % (a, b))

    def test_alternating_phases_labels_never_overlap(self):
        # Phases A and B alternating: one band per run, in one row. Each
        # band is 15 us of a 3 ms chart (~5 px): too narrow for any of its
        # name, which goes beside it, where the next bands are. Labels placed by
        # the band's width overprinted; now by their own: none overlaps,
        # and those that would are left out (the band's title names it).
        names = ("compile", "output")
        phases = [(names[i % 2], 100000 + 120000 * i, 115000 + 120000 * i)
                  for i in range(20)]
        root = ET.fromstring(render(phases=phases))
        groups = of_class(by_id(root, "phases"), "phase", "g")
        self.assertEqual(len(groups), 20)
        tags = {float(g.find(NS + "rect[@class='tag']").get("y"))
                for g in groups}
        self.assertEqual(len(tags), 1)           # one row: no band overlaps
        labels = self.labels(root)
        self.assertNoLabelsOverlap(labels)
        self.assertGreater(len(labels), 2)
        self.assertLess(len(labels), 20)
        for g in groups:   # every band keeps its name in its title
            self.assertIn(g.find(NS + "title").text.split(":")[0], names)

    def test_labels_in_a_crowded_row_placed_by_text_width(self):
        # Bands wide enough for 3 characters, names much longer: each is
        # cut to its band, so none spills into the next.
        phases = [("a_very_long_phase_name_%d" % i, 300000 * i,
                   300000 * i + 280000) for i in range(10)]
        root = ET.fromstring(render(phases=phases))
        p = Plot(root, 0, 3000000, 4 * MiB)
        labels = self.labels(root)
        self.assertEqual(len(labels), 10)
        self.assertNoLabelsOverlap(labels)
        for (_y, left, right, text), (_n, start, end) in zip(labels, phases):
            self.assertTrue(text.endswith(".."), text)
            self.assertGreaterEqual(left, p.x(start))
            self.assertLessEqual(right, p.x(end) + 4)

    def test_phase_labels_on_a_synthetic_chart(self):
        # phase_labels alone: three bands in one row; the middle one is
        # too narrow, its name beside it would run into the third's right
        # of it, and left of it into the first's: left out; the others are
        # named in full inside their bands.
        chart = timeline._Chart(0, 0, 1000, 1)   # 1090 px for 1000 ns
        w = timeline.label_width("alpha")
        phases = [("alpha", 0, 60), ("beta", 60, 62),
                  ("gamma", 62, 300)]
        got = timeline.phase_labels(chart, phases, [0, 0, 0])
        self.assertEqual([g and g[0] for g in got], ["alpha", None, "gamma"])
        self.assertAlmostEqual(got[0][4] - got[0][3], w)

    def test_phase_widens_the_time_axis(self):
        root = ET.fromstring(render(phases=[("tail", 2000000, 4000000)]))
        p = Plot(root, 0, 4000000, 4 * MiB)
        last = points(of_class(root, "area", "polygon")[0])[3]
        self.assertNear(last[0], p.x(3000000))
        self.assertEqual(by_id(root, "xaxis").findall(NS + "text")[-1].text, "4 ms")

    def test_hover_columns(self):
        root = ET.fromstring(render(committed=COMMITTED))
        p = Plot(root, 0, 3000000, 5 * MiB)
        cols = of_class(by_id(root, "columns"), "c", "rect")
        self.assertEqual(len(cols), len(TIMES))
        xs = [p.x(t) for t in TIMES]
        edges = [p.left] + [(a + b) / 2 for a, b in zip(xs, xs[1:])] + [p.left + p.width]
        for i, c in enumerate(cols):
            self.assertNear(float(c.get("data-x")), xs[i])
            self.assertNear(float(c.get("x")), edges[i])
            self.assertNear(float(c.get("width")), edges[i + 1] - edges[i])
        self.assertEqual(cols[3].find(NS + "title").text,
                         "3.000 ms\ntotal: 1.0 MiB\na<b: 1.0 MiB\nc & d: 0 B\n"
                         "other sites: 512 B\ncommitted: 5.0 MiB")
        # one title line per legend row, after the time: what the script maps
        self.assertEqual(len(cols[0].find(NS + "title").text.split("\n")),
                         1 + len(legend(root)))

    def test_escaping(self):
        label = "std::map<K, V>::f(\"q\", 'c') & x\x01y\nz"
        doc = timeline.render("T & <x>", "'\"<s>", [0, 10], [(label, [1, 2])], None,
                              [1, 2], (10, 2), phases=[("<p&q>", 0, 10)])
        self.assertNotIn("<K", doc)
        self.assertNotIn("<x>", doc)
        self.assertNotIn("<p&", doc)
        root = ET.fromstring(doc)
        self.assertEqual(by_id(root, "title").text, "T & <x>")
        self.assertEqual(by_id(root, "subtitle").text, "'\"<s>")
        clean = "std::map<K, V>::f(\"q\", 'c') & x y z"
        self.assertEqual(legend(root)[1], ("2 B", clean))
        self.assertEqual(of_class(root, "area", "polygon")[0].get("data-label"), clean)
        self.assertEqual(of_class(root, "phase", "g")[0].find(NS + "text").text, "<p&q>")
        title = of_class(root, "c", "rect")[1].find(NS + "title").text
        self.assertEqual(title.split("\n")[2], clean + ": 2 B")

    def test_long_label_truncated_with_full_title(self):
        label = "f" * 300
        root = ET.fromstring(render(series=[(label, TOTAL)], other=None))
        text = of_class(by_id(root, "legend"), "l", "text")[1]
        # 1200 - 20 - (90 + 130) = 960 px -> int(960 / (12 * 0.59)) = 135 chars
        self.assertEqual(text.text, "f" * 133 + "..")
        self.assertEqual(text.find(NS + "title").text, label)

    def test_one_point_drawn_flat(self):
        root = ET.fromstring(timeline.render("T", "", [5000000], [("a", [100])], None,
                                             [100], (5000000, 100)))
        p = Plot(root, 5000000, 6000000, 100)   # one moment: 1 ms shown after it
        left, right = p.left, p.left + p.width
        self.assertEqual(points(of_class(root, "area", "polygon")[0]),
                         [(left, p.top), (right, p.top), (right, p.top + p.height),
                          (left, p.top + p.height)])
        self.assertNear(float(by_id(root, "peak").find(NS + "line").get("x1")), left)
        col = of_class(root, "c", "rect")[0]
        self.assertEqual((float(col.get("x")), float(col.get("width"))), (left, p.width))
        self.assertEqual([t.text for t in by_id(root, "yaxis").iter(NS + "text")],
                         ["0 B", "20 B", "40 B", "60 B", "80 B", "100 B"])

    def test_all_zeros(self):
        zeros = [0] * 4
        root = ET.fromstring(render(series=[("a", zeros)], other=zeros, total=zeros,
                                    peak=(0, 0)))
        p = Plot(root, 0, 3000000, 1)
        for area in of_class(root, "area", "polygon"):
            self.assertEqual({y for _x, y in points(area)}, {p.top + p.height})
        self.assertEqual([t.text for t in by_id(root, "yaxis").iter(NS + "text")],
                         ["0 B", "1 B"])
        self.assertEqual(by_id(root, "peak").find(NS + "text").text, "peak 0 B at 0.000 ms")

    def test_no_series(self):
        root = ET.fromstring(render(series=[], other=None))
        self.assertEqual(of_class(root, "area", "polygon"), [])
        self.assertEqual(legend(root), [("4.0 MiB", "total")])
        root = ET.fromstring(render(series=[], other=TOTAL))
        self.assertEqual([a.get("data-label") for a in of_class(root, "area", "polygon")],
                         ["other sites"])

    def test_single_series(self):
        root = ET.fromstring(render(series=[("only", TOTAL)], other=None))
        p = Plot(root, 0, 3000000, 4 * MiB)
        (area,) = of_class(root, "area", "polygon")
        self.assertNear(points(area)[2][1], p.y(4 * MiB))
        self.assertEqual(legend(root), [("4.0 MiB", "total"), ("4.0 MiB", "only")])

    def test_thirty_series(self):
        series = [("s%d" % k, [k * 10, (30 - k) * 10]) for k in range(30)]
        total = [sum(v[i] for _l, v in series) for i in (0, 1)]
        root = ET.fromstring(timeline.render("T", "", [0, 1], series, [1, 1],
                                             [t + 1 for t in total], (0, total[0] + 1)))
        areas = of_class(root, "area", "polygon")
        self.assertEqual(len(areas), 31)
        self.assertEqual(len({a.get("fill") for a in areas}), 31)
        self.assertEqual([l for _v, l in legend(root)],
                         ["total"] + ["s%d" % k for k in range(30)] + ["other sites"])
        # the legend fits: the document is tall enough for every row
        last_y = float(of_class(by_id(root, "legend"), "l", "text")[-1].get("y"))
        self.assertLess(last_y, float(root.get("height")))

    def test_huge_values(self):
        big = 1 << 60                # 1 EiB: 1048576 TiB
        root = ET.fromstring(timeline.render("T", "", [0, 1], [("a", [big, 0])], None,
                                             [big, 0], (0, big)))
        # TiB steps: 1048576 / 5 -> 500000 TiB, three steps
        self.assertEqual([t.text for t in by_id(root, "yaxis").iter(NS + "text")],
                         ["0 B", "500000.0 TiB", "1000000.0 TiB", "1500000.0 TiB"])
        p = Plot(root, 0, 1, 1500000 * (1 << 40))
        self.assertNear(points(of_class(root, "area", "polygon")[0])[0][1], p.y(big))
        self.assertEqual(legend(root)[1], ("1048576.0 TiB", "a"))

    def test_byte_ticks(self):
        self.assertEqual(timeline._byte_ticks(1100), (1536, [0, 512, 1024, 1536]))
        self.assertEqual(timeline._byte_ticks(7), (8, [0, 2, 4, 6, 8]))
        self.assertEqual(timeline._byte_ticks(0), (1, [0, 1]))
        self.assertEqual(timeline._byte_ticks(3 * MiB), (3 * MiB, [0, MiB, 2 * MiB, 3 * MiB]))

    def test_time_ticks(self):
        ms = (1e6, "ms")
        ticks = timeline._time_ticks(0, 250000, ms)
        self.assertEqual([l for _t, l in ticks],
                         ["0.00 ms", "0.05 ms", "0.10 ms", "0.15 ms", "0.20 ms", "0.25 ms"])
        for (t, _l), want in zip(ticks, range(0, 250001, 50000)):
            self.assertAlmostEqual(t, want, delta=1e-6)
        self.assertEqual([l for _t, l in timeline._time_ticks(3e9, 13e9, (1e9, "s"))],
                         ["4 s", "6 s", "8 s", "10 s", "12 s"])

    def test_empty(self):
        doc = timeline.render("T", "", [], [], None, [], (0, 0))
        root = ET.fromstring(doc)
        self.assertEqual(by_id(root, "empty").text, "No memory recorded")
        self.assertEqual(of_class(root, "area", "polygon"), [])

    def test_bad_input_rejected(self):
        bad = [
            dict(times=[0, 2, 1, 3]),                                 # unsorted
            dict(times=[-1, 0, 1, 2]),                                # negative time
            dict(times=[0, 1, 2, math.nan]),
            dict(series=[("a", [0, -1, 0, 0])]),                      # negative bytes
            dict(series=[("a", [0, 1, 2])]),                          # too short
            dict(other=[0, 0, math.inf, 0]),
            dict(total=[0, 0, 0]),
            dict(committed=[0, 0, -5, 0]),
            dict(peak=(-1, 4)),
            dict(peak=(1, -4)),
            dict(phases=[("p", 5, 1)]),                               # ends before it begins
            dict(phases=[("p", -5, 1)]),
            dict(series=[("a", [0, "1", 0, 0])]),
            dict(total=[0, 0, 10 ** 400, 0]),                         # beyond a float
        ]
        for kw in bad:
            with self.assertRaises(ValueError, msg=repr(kw)):
                render(**kw)
        render(times=[0, 1, 1, 2])          # equal times are ascending


if __name__ == "__main__":
    unittest.main()
