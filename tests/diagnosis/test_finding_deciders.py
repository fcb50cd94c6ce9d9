"""One rule per finding code: the registry names the one function that decides each code (`decided_by`), and
every module that raises the code, on a node or in the fleet, is that function's or calls it. So the fleet's
`kv_saturated` is the node's rule, not a copy that drifts from it."""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from pathlib import Path

import pytest

from gpumem_tui.diagnosis.findings.registry import BY_CODE, FINDINGS

DIAGNOSIS = Path(__file__).resolve().parents[2] / "gpumem_tui" / "diagnosis"
VIEWS = {"findings": "node", "fleet": "fleet"}
"""The folder of diagnosis/ a module raising a code sits in -> the view that raises it."""


def _module(path: Path) -> str:
    return ".".join(path.relative_to(DIAGNOSIS).with_suffix("").parts)


def _raised() -> dict[str, set[str]]:
    """Code -> the modules under diagnosis/ that make a Finding with that literal code."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in DIAGNOSIS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding":
                for keyword in node.keywords:
                    if keyword.arg == "code" and isinstance(keyword.value, ast.Constant):
                        found[keyword.value.value].add(_module(path))
    return found


def _calls(module: str, decider: str) -> bool:
    """Whether the module imports the decider by name from its module and calls it."""
    where, name = decider.split(":")
    tree = ast.parse((DIAGNOSIS / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
    imported = any(
        isinstance(node, ast.ImportFrom)
        and node.module == f"gpumem_tui.diagnosis.{where}"
        and name in {alias.name for alias in node.names}
        for node in ast.walk(tree)
    )
    called = any(isinstance(node, ast.Call) and getattr(node.func, "id", None) == name for node in ast.walk(tree))
    return imported and called


@pytest.mark.parametrize("kind", FINDINGS, ids=[kind.code for kind in FINDINGS])
def test_the_decider_of_each_code_is_a_function(kind):
    where, name = kind.decided_by.split(":")
    assert callable(getattr(importlib.import_module(f"gpumem_tui.diagnosis.{where}"), name))


def test_every_module_that_raises_a_code_is_its_deciders_or_calls_it():
    raised = _raised()
    assert set(raised) == set(BY_CODE), "a registered code no module raises, or a code raised unregistered"
    for code, modules in raised.items():
        decider = BY_CODE[code].decided_by
        for module in modules:
            assert module == decider.split(":")[0] or _calls(module, decider), f"{module} decides {code} itself"


def test_the_views_a_code_names_are_the_ones_that_raise_it():
    for code, modules in _raised().items():
        assert {VIEWS[m.split(".")[0]] for m in modules} == set(BY_CODE[code].views), code


def test_a_copy_of_a_rule_in_the_fleet_fails(tmp_path, monkeypatch):
    """The check itself: a fleet module that raises kv_saturated without the node's `saturated` is caught."""
    copy = tmp_path / "fleet"
    copy.mkdir()
    (copy / "copied.py").write_text(
        "def kv(e):\n    if e.kv_usage_fraction >= 0.9:\n        return Finding(code='kv_saturated')\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(f"{__name__}.DIAGNOSIS", tmp_path)
    assert _raised() == {"kv_saturated": {"fleet.copied"}}
    assert not _calls("fleet.copied", BY_CODE["kv_saturated"].decided_by)
