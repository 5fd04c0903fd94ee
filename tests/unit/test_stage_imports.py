"""The seam between analyze/ and render/ (issue 33 item 1): renderers
read the Report and nothing else, so render/ imports nothing of the other
stages (only the package's shared words.py, errors.py, contract.py,
interrupts.py, textio.py), and analyze/ never imports render/. Read from the
modules' import statements, those inside functions too."""
import os, sys, unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import ast

LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                   "scripts", "allocsites_lib")
SHARED = {"words", "errors", "contract", "interrupts", "textio"}


def imported(stage):
    """{module file: set of the package's modules it imports, dotted
    from the package ("render.csvout", "words")}."""
    out = {}
    folder = os.path.join(LIB, stage)
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = [stage][:max(0, 2 - node.level)]
                parts = base + (node.module.split(".") if node.module
                                else [])
                if node.module:
                    found.add(".".join(parts))
                else:
                    found.update(".".join(parts + [a.name])
                                 for a in node.names)
            elif isinstance(node, ast.ImportFrom) and \
                    (node.module or "").startswith("allocsites_lib"):
                found.add(node.module.split(".", 1)[-1])
        out[name] = found
    return out


class StageImports(unittest.TestCase):

    def test_render_imports_only_render_and_the_shared_modules(self):
        for name, modules in imported("render").items():
            for module in modules:
                with self.subTest(module=name, imports=module):
                    self.assertTrue(module.startswith("render.") or
                                    module in SHARED)

    def test_analyze_never_imports_render(self):
        for name, modules in imported("analyze").items():
            for module in modules:
                with self.subTest(module=name, imports=module):
                    self.assertFalse(module.startswith("render"))

    def test_the_reading_sees_the_imports(self):
        got = imported("render")
        self.assertIn("render.pprofout", got["outputs.py"])
        self.assertIn("interrupts", got["outputs.py"])
        self.assertIn("words", got["table.py"])
        self.assertIn("analyze.fold", imported("analyze")["document.py"])


if __name__ == "__main__":
    unittest.main()
