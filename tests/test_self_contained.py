"""A fresh clone runs every test: tests and bench scripts read nothing beside the checkout, and no test is
skipped because a data file is missing (the real data they use is copied into tests/data)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.glob("tests/**/*.py"), *ROOT.glob("bench/*.py")])
OUTSIDE = re.compile(r"(^|/)\.\.(/|$)|^/work/|^/tmp/|^~/")
"""String literals that name a place outside the repository: a parent folder, an absolute home of data."""
BESIDE = {"shared"}
"""Folders beside a CI checkout that a fresh clone does not have."""


def _parents_index(node: ast.AST) -> int | None:
    """N in `Path(__file__)...parents[N]`; None for any other expression."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents"):
        return None
    if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int) and _from_file(node.value.value):
        return node.slice.value
    return None


def _from_file(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(node))


def _escapes(text: str, where: Path) -> list[str]:
    """What in this source, read as the file `where`, points outside the repository root."""
    found = []
    for node in ast.walk(ast.parse(text)):
        index = _parents_index(node)
        if index is not None:
            target = where.resolve().parents[index]
            if not target.is_relative_to(ROOT):
                found.append(f"line {node.lineno}: parents[{index}] is {target}, outside the repository")
        literal = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
        if literal is not None and (literal in BESIDE or OUTSIDE.search(literal)):
            found.append(f"line {node.lineno}: {node.value!r} names a place outside the repository")
    return found


def _skips_on_missing_files(text: str) -> list[str]:
    """`skipif(not X.exists())` or a `pytest.skip` under `if not X.exists()`: data that may be absent."""
    found = []
    for node in ast.walk(ast.parse(text)):
        tests = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "skipif":
            tests = node.args[:1]
        elif isinstance(node, ast.If) and any(
            isinstance(n, ast.Attribute) and n.attr == "skip" for n in ast.walk(ast.Module(body=node.body))
        ):
            tests = [node.test]
        for test in tests:
            if any(isinstance(n, ast.Attribute) and n.attr in ("exists", "is_file", "is_dir") for n in ast.walk(test)):
                found.append(f"line {node.lineno}: skipped when a file is missing")
    return found


def test_the_scan_sees_the_tests_and_the_bench_scripts():
    names = {p.relative_to(ROOT).as_posix() for p in SOURCES}
    assert {"tests/catalog/test_hfconfig.py", "bench/accuracy.py", "tests/datafiles.py"} <= names


def test_nothing_reads_beside_the_checkout():
    found = {
        p.relative_to(ROOT).as_posix(): _escapes(p.read_text(encoding="utf-8"), p)
        for p in SOURCES
        if p != Path(__file__).resolve()
    }
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_no_test_is_skipped_for_missing_data():
    found = {p.relative_to(ROOT).as_posix(): _skips_on_missing_files(p.read_text(encoding="utf-8")) for p in SOURCES}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_the_scan_catches_a_path_beside_the_checkout():
    """The checks above could not pass by looking at nothing: the old way of reaching the data is caught."""
    old = (
        "from pathlib import Path\nimport pytest\n"
        'REF = Path(__file__).resolve().parents[3] / "shared" / "data.json"\n'
        'GONE = pytest.mark.skipif(not REF.exists(), reason="absent")\n'
    )
    found = _escapes(old, ROOT / "tests" / "catalog" / "test_old.py")
    assert any("parents[3]" in line for line in found) and any("'shared'" in line for line in found)
    assert _skips_on_missing_files(old)
    assert (
        _escapes(
            old.replace("parents[3]", "parents[1]").replace('"shared"', '"data"'),
            ROOT / "tests" / "catalog" / "test_old.py",
        )
        == []
    )
