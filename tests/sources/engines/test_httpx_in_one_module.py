"""httpx lives in one module, sources/http.py: the engine scraper and the Prometheus client build their
clients there."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "gpumem_tui"


def test_httpx_only_in_the_http_module() -> None:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            if any(name.split(".")[0] == "httpx" for name in names):
                found.add(path.relative_to(PACKAGE).as_posix())
    assert found == {"sources/http.py"}
