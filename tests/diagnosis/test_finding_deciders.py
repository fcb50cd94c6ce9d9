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


def _tree(module: str) -> ast.Module:
    return ast.parse((DIAGNOSIS / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))


def _made(node: ast.AST) -> set[str]:
    """The codes of the Findings made (`Finding(code="...")`) in `node`."""
    return {
        keyword.value.value
        for call in ast.walk(node)
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Finding"
        for keyword in call.keywords
        if keyword.arg == "code" and isinstance(keyword.value, ast.Constant)
    }


def _called(node: ast.AST) -> set[str]:
    return {call.func.id for call in ast.walk(node) if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)}


def _rules(module: str) -> dict[str, set[str]]:
    """The module's top-level functions -> the codes each raises: the Findings it makes, or a function of the
    module it calls makes (a node rule and its builders)."""
    functions = {f.name: f for f in _tree(module).body if isinstance(f, ast.FunctionDef)}
    codes = {name: _made(f) for name, f in functions.items()}
    calls = {name: _called(f) & set(functions) for name, f in functions.items()}
    changed = True
    while changed:
        changed = False
        for name in functions:
            more = set().union(*(codes[c] for c in calls[name])) - codes[name]
            if more:
                codes[name] |= more
                changed = True
    return codes


def _imported_rules(module: str) -> list[tuple[str, str, set[str]]]:
    """(module, function, codes it raises) of each node rule (diagnosis/findings/) the module imports by name
    and calls or hands on to be called (`judged(rule, ...)`)."""
    tree = _tree(module)
    called = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpumem_tui.diagnosis.findings."):
            where = node.module.removeprefix("gpumem_tui.diagnosis.")
            if not (DIAGNOSIS / (where.replace(".", "/") + ".py")).exists():
                continue
            rules = _rules(where)
            found += [
                (where, a.name, rules[a.name]) for a in node.names if a.name in rules and (a.asname or a.name) in called
            ]
    return found


def _raised() -> dict[str, set[str]]:
    """Code -> the modules under diagnosis/ that make a Finding with that literal code, or, in the fleet, call a
    node rule that makes one (the fleet words an engine's finding with the node's own rule)."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in DIAGNOSIS.rglob("*.py"):
        module = _module(path)
        codes = _made(_tree(module))
        if module.startswith("fleet."):
            codes |= {code for _, _, raised in _imported_rules(module) for code in raised}
        for code in codes:
            found[code].add(module)
    return found


def _calls(module: str, code: str, decider: str) -> bool:
    """Whether the module imports the decider by name from its module and calls it, or calls a rule of the
    decider's module that raises the code (which is the decider's or calls it)."""
    where, name = decider.split(":")
    tree = _tree(module)
    imported = any(
        isinstance(node, ast.ImportFrom)
        and node.module == f"gpumem_tui.diagnosis.{where}"
        and name in {alias.name for alias in node.names}
        for node in ast.walk(tree)
    )
    if imported and name in _called(tree):
        return True
    return any(rule_module == where and code in raised for rule_module, _, raised in _imported_rules(module))


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
            assert module == decider.split(":")[0] or _calls(module, code, decider), f"{module} decides {code} itself"


def test_the_views_a_code_names_are_the_ones_that_raise_it():
    """Each view the registry names raises the code (itself, or the fleet through the node's rule), and no view
    makes a Finding with a code it does not name (a node rule the fleet words with may raise more codes than the
    fleet meets: engine_down's rule says engine_starting where a process of the engine lives; the fleet has none)."""
    made = {path: _made(_tree(_module(path))) for path in DIAGNOSIS.rglob("*.py")}
    for code, modules in _raised().items():
        views = set(BY_CODE[code].views)
        assert views <= {VIEWS[m.split(".")[0]] for m in modules}, code
        assert {VIEWS[_module(p).split(".")[0]] for p, codes in made.items() if code in codes} <= views, code


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
    assert not _calls("fleet.copied", "kv_saturated", BY_CODE["kv_saturated"].decided_by)
