"""Dead code goes: every name defined at the top of a module in the package is used somewhere else.

A name counts as used when its word appears twice or more in the package, the tests or the benches (its
definition is one). Coarse on purpose: a name only a comment mentions passes, but a forgotten constant,
function or class fails. (Name no example here: this file's words count too.)
"""

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _defined(tree: ast.Module) -> list[str]:
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in names if not n.startswith("__")]


def unused_names() -> list[str]:
    paths = [p for d in ("gpumem_tui", "tests", "bench") for p in (ROOT / d).rglob("*.py")]
    texts = {p: p.read_text(encoding="utf-8") for p in paths}
    words = Counter(w for text in texts.values() for w in re.findall(r"\w+", text))
    package = [p for p in texts if p.is_relative_to(ROOT / "gpumem_tui")]
    return [
        f"{p.relative_to(ROOT)}: {name}"
        for p in sorted(package)
        for name in _defined(ast.parse(texts[p]))
        if words[name] < 2
    ]


def test_every_top_level_name_is_used():
    assert unused_names() == []
