"""The layering rule: the core never loads Textual or Rich; each vendor library lives in one module."""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gpumem_tui"
UI_PARTS = {"app", "cli"}


def _core_modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        if rel.parts[1] in UI_PARTS or rel.name == "__main__":
            continue
        names.append(".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts))
    return names


def test_core_imports_neither_textual_nor_rich():
    modules = _core_modules()
    assert "gpumem_tui.planner.params" in modules
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules) + (
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\nprint(','.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core loaded: {out.stdout.strip()}"


def _importers(library: str) -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name.split(".")[0] == library for name in names):
                found.add(str(path.relative_to(PACKAGE)))
    return found


def test_planner_does_no_io_and_never_imports_sources():
    for library in ("httpx", "psutil", "pynvml", "socket"):
        assert not {p for p in _importers(library) if p.startswith("planner")}
    for path in (PACKAGE / "planner").rglob("*.py"):
        assert "gpumem_tui.sources" not in path.read_text(encoding="utf-8"), path


def test_the_live_feed_loads_neither_the_simulator_nor_the_catalog_nor_the_planner():
    code = ("import sys, gpumem_tui.sources.feed\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[:2] in (\n"
            "    ['gpumem_tui', 'demo'], ['gpumem_tui', 'catalog'], ['gpumem_tui', 'planner']))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing the live feed loaded: {out.stdout.strip()}"
