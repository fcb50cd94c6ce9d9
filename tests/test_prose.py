"""Docstrings say what and why in a few sentences: none in the package runs past MAX_WORDS words. Longer
rationale belongs in docs/design/."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gpumem_tui"
MAX_WORDS = 120


def docstrings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every docstring in a module: the module's, each class's and function's, and each
    attribute's (a string statement right after an assignment, in any body)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node, clean=False)
            if text is not None:
                found.append((node.body[0].lineno, text))
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for before, after in zip(body, body[1:], strict=False):
                if (
                    isinstance(before, ast.Assign | ast.AnnAssign)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                ):
                    found.append((after.lineno, after.value.value))
    return found


def long_docstrings(root: Path) -> list[str]:
    """`path:line (N words)` for each docstring under `root` over MAX_WORDS words."""
    long = []
    for path in sorted(root.rglob("*.py")):
        for line, text in sorted(docstrings(ast.parse(path.read_text(encoding="utf-8")))):
            words = len(text.split())
            if words > MAX_WORDS:
                long.append(f"{path.relative_to(root.parent)}:{line} ({words} words)")
    return long


def test_no_docstring_runs_past_120_words():
    long = long_docstrings(PACKAGE)
    assert not long, "say what and why in a few sentences; the rest goes to docs/design/:\n" + "\n".join(long)


def test_the_rule_sees_every_kind_of_docstring(tmp_path):
    essay = " ".join(["word"] * (MAX_WORDS + 1))
    short = " ".join(["word"] * MAX_WORDS)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        f'"""{essay}"""\n'
        f'X = 1\n"""{essay}"""\n'
        f'Y = 2\n"""{short}"""\n'
        f'class C:\n    """{essay}"""\n\n    z: int = 0\n    """{essay}"""\n\n'
        f'    def f(self):\n        """{essay}"""\n\n'
        f'async def g():\n    """{short}"""\n'
    )
    assert long_docstrings(tmp_path / "pkg") == [
        f"pkg/m.py:{line} ({MAX_WORDS + 1} words)" for line in (1, 3, 7, 10, 13)
    ]
