"""Each vendor library lives in one module: pynvml in sources/nvml.py, psutil in sources/host.py."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gpumem_tui"


def importers(library: str) -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            if any(name.split(".")[0] == library for name in names):
                found.add(path.relative_to(PACKAGE).as_posix())
    return found


def test_pynvml_only_in_the_nvml_source():
    assert importers("pynvml") == {"sources/nvml.py"}


def test_psutil_only_in_the_host_source():
    assert importers("psutil") == {"sources/host.py"}
