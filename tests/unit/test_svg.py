import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from allocsites_lib.render import flamegraph

import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"

# total bytes 4 MiB = 4194304, total count 100
STACKS = [
    (["main (/src/main.c:10)", "parse_expr (/src/parser.c:120)", "rt_alloc"], 60, 3145728),
    (["main (/src/main.c:10)", "parse_stmt (/src/parser.c:300)", "rt_alloc"], 40, 1048576),
]


def frame_list(doc):
    """[(name, g, rect, title_text)] for every frame <g>, in document (pre-)order."""
    out = []
    for g in ET.fromstring(doc).iter(NS + "g"):
        if g.get("class") == "f":
            title = g.find(NS + "title").text
            out.append((title.split("\n")[0], g, g.find(NS + "rect"), title))
    return out


def frames_of(doc):
    """{name: (g, rect, title_text)}, first occurrence of each name."""
    out = {}
    for name, g, rect, title in frame_list(doc):
        out.setdefault(name, (g, rect, title))
    return out


def width(rect):
    return float(rect.get("width"))


class RenderSvgTest(unittest.TestCase):
    def test_well_formed_and_frame_set(self):
        doc = flamegraph.render_svg(STACKS)
        root = ET.fromstring(doc)
        self.assertEqual(root.tag, NS + "svg")
        # merged: all, main, parse_expr, parse_stmt, rt_alloc x2 (different parents); pre-order
        self.assertEqual([n for n, _g, _r, _t in frame_list(doc)],
                         ["all", "main (/src/main.c:10)", "parse_expr (/src/parser.c:120)", "rt_alloc",
                          "parse_stmt (/src/parser.c:300)", "rt_alloc"])
        self.assertEqual([g.get("data-end") for _n, g, _r, _t in frame_list(doc)],
                         ["5", "5", "3", "3", "5", "5"])

    def test_widths_proportional_to_bytes(self):
        f = frames_of(flamegraph.render_svg(STACKS, width=1200))
        w_expr = width(f["parse_expr (/src/parser.c:120)"][1])
        w_stmt = width(f["parse_stmt (/src/parser.c:300)"][1])
        # coordinates are rounded to 4 decimals; full width is 1200 - 2*10
        self.assertEqual(w_expr, 885.0)
        self.assertEqual(w_stmt, 295.0)
        self.assertAlmostEqual(w_expr / w_stmt, 3.0, delta=3e-6)
        self.assertEqual(width(f["all"][1]), 1180.0)
        # siblings sorted alphabetically and adjacent
        self.assertEqual(float(f["parse_expr (/src/parser.c:120)"][1].get("x")), 10.0)
        self.assertEqual(float(f["parse_stmt (/src/parser.c:300)"][1].get("x")), 895.0)

    def test_weight_count_changes_widths(self):
        f = frames_of(flamegraph.render_svg(STACKS, weight="count"))
        self.assertEqual(width(f["parse_expr (/src/parser.c:120)"][1]), 708.0)  # 60% of 1180
        self.assertEqual(width(f["parse_stmt (/src/parser.c:300)"][1]), 472.0)  # 40%
        self.assertIn("60.00% of total count", f["parse_expr (/src/parser.c:120)"][2])
        self.assertRaises(ValueError, flamegraph.render_svg, STACKS, weight="pages")

    def test_hover_text_totals_and_percent(self):
        doc = flamegraph.render_svg(STACKS)
        f = frames_of(doc)
        self.assertEqual(f["main (/src/main.c:10)"][2],
                         "main (/src/main.c:10)\nbytes: 4.0 MiB (4194304 bytes)\ncount: 100\n"
                         "100.00% of total bytes")
        self.assertEqual(f["parse_expr (/src/parser.c:120)"][2],
                         "parse_expr (/src/parser.c:120)\nbytes: 3.0 MiB (3145728 bytes)\n"
                         "count: 60\n75.00% of total bytes")
        self.assertEqual(f["parse_expr (/src/parser.c:120)"][0].get("data-v"), "3145728")
        # details line at the bottom exists and is filled by the inline JS on mouseover
        root = ET.fromstring(doc)
        ids = {e.get("id") for e in root.iter() if e.get("id")}
        self.assertTrue({"details", "matched", "search", "unzoom", "frames"} <= ids)
        self.assertIn('addEventListener("mouseover"', doc)

    def test_human_bytes(self):
        f = frames_of(flamegraph.render_svg([(["a"], 3, 1572864), (["b"], 1, 512)]))
        self.assertIn("bytes: 1.5 MiB (1572864 bytes)", f["a"][2])
        self.assertIn("bytes: 512 B (512 bytes)", f["b"][2])

    def test_shared_frame_totals_sum(self):
        stacks = [(["m", "x"], 1, 10), (["m", "x"], 2, 20), (["m", "y"], 4, 70)]
        f = frames_of(flamegraph.render_svg(stacks))
        self.assertIn("bytes: 30 B (30 bytes)\ncount: 3\n30.00% of total bytes", f["x"][2])
        self.assertIn("count: 7\n", f["m"][2])

    def test_escaping(self):
        name = "std::vector<int, A&B>::f(\"q\", 'c')"
        doc = flamegraph.render_svg([(["main", name], 1, 100)])
        self.assertNotIn("<int", doc)
        f = frames_of(doc)
        self.assertIn(name, f)
        self.assertEqual(flamegraph.render_svg([(["a<b"], 1, 1)], title="T & <x>", subtitle="'\"").count("<b"), 0)
        ET.fromstring(flamegraph.render_svg([(["a<b"], 1, 1)], title="T & <x>", subtitle="'\""))

    def test_empty_input(self):
        for stacks in ([], iter(())):
            doc = flamegraph.render_svg(stacks)
            root = ET.fromstring(doc)
            self.assertIn("No allocations recorded", doc)
            self.assertEqual([g for g in root.iter(NS + "g") if g.get("class") == "f"], [])

    def test_float_estimates_rounded(self):
        f = frames_of(flamegraph.render_svg([(["a"], 2.6, 1536.4), (["b"], 1, 512)]))
        self.assertIn("bytes: ~1.5 KiB (~1536 bytes)\ncount: ~3\n75.00% of total bytes", f["a"][2])
        self.assertIn("count: ~4\n", f["all"][2])          # 3.6 total -> float -> estimate
        self.assertIn("bytes: 512 B (512 bytes)\ncount: 1\n", f["b"][2])

    def test_narrow_boxes_omitted_but_counted(self):
        f = frames_of(flamegraph.render_svg([(["big"], 1, 10 ** 6), (["big", "tiny"], 1, 1)]))
        self.assertNotIn("tiny", f)                        # 1/1e6 * 1180 px < 0.1 px
        self.assertIn("(1000001 bytes)", f["big"][2])

    def test_deep_stack_no_recursion_limit(self):
        frames = ["f%d" % i for i in range(3000)]
        doc = flamegraph.render_svg([(frames, 1, 8)])
        self.assertEqual(len(frame_list(doc)), 3001)
        self.assertEqual(frame_list(doc)[0][1].get("data-end"), "3000")

    def test_truncated_label(self):
        long = "x" * 300
        doc = flamegraph.render_svg([([long], 1, 1), (["y"], 1, 1)])
        root = ET.fromstring(doc)
        labels = [g.find(NS + "text").text or "" for g in root.iter(NS + "g") if g.get("class") == "f"]
        # box is 590 px wide -> int(590 / (12*0.59)) = 83 chars -> 81 x's + ".."
        self.assertIn("x" * 81 + "..", labels)

    def test_colors_deterministic_and_warm(self):
        a = flamegraph.render_svg(STACKS, subtitle="s")
        self.assertEqual(a, flamegraph.render_svg(STACKS, subtitle="s"))
        self.assertEqual(a, flamegraph.render_svg(list(reversed(STACKS)), subtitle="s"))
        for _g, rect, _t in frames_of(a).values():
            r, g, b = (int(v) for v in rect.get("fill")[4:-1].split(","))
            self.assertTrue(r >= 205 and g <= 230 and b <= 55, rect.get("fill"))


if __name__ == "__main__":
    unittest.main()
