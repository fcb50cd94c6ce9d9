"""No import circles in the package: every import counts (inside functions and under `if TYPE_CHECKING:`
too), so two modules that need each other are a design to untie, not an import to hide. And one Textual
App: the node and the fleet are screens inside it."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gpumem_tui"


def modules(package: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under `package` (a package is its `__init__.py`)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        found[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = path
    return found


def _known(name: str, known: dict[str, Path]) -> str | None:
    """`name`, or the nearest package above it, that is one of `known`'s modules."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _base(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module a `from ... import` names, its dots resolved against `importer`."""
    if not node.level:
        return node.module or ""
    parts = importer.split(".") if is_package else importer.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` that module `name` imports anywhere in its file. `from pkg import x` imports
    the submodule `pkg.x` where there is one, else `pkg` itself."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {_known(alias.name, known) for alias in node.names} - {None}
        elif isinstance(node, ast.ImportFrom):
            base = _base(node, name, path.name == "__init__.py")
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in known else _known(base, known))
    return found - {None, name}


def import_graph(package: Path) -> dict[str, set[str]]:
    known = modules(package)
    return {name: imports_of(name, path, known) for name, path in known.items()}


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def _one_cycle(graph: dict[str, set[str]], circle: set[str]) -> list[str]:
    """A shortest path from the circle's first module back to it, through the circle only."""
    start = min(circle)
    paths = {start: [start]}
    todo = [start]
    while todo:
        here = todo.pop(0)
        for nxt in sorted(graph[here] & circle):
            if nxt == start:
                return paths[here] + [start]
            if nxt not in paths:
                paths[nxt] = paths[here] + [nxt]
                todo.append(nxt)
    raise AssertionError(f"{start} is in no cycle")


def import_cycles(graph: dict[str, set[str]]) -> list[str]:
    """One line for each set of modules that import one another in a circle (a strongly connected component
    of more than one module): a cycle in it, then every module in it."""
    reach = {name: _reachable(graph, name) for name in graph}
    circles, placed = [], set()
    for name in sorted(graph):
        circle = {other for other in reach[name] if name in reach[other]} | {name}
        if len(circle) > 1 and name not in placed:
            placed |= circle
            circles.append(f"{' -> '.join(_one_cycle(graph, circle))} (all {len(circle)}: {', '.join(sorted(circle))})")
    return circles


def test_no_module_imports_itself_through_others():
    cycles = import_cycles(import_graph(PACKAGE))
    assert not cycles, "import circles:\n" + "\n".join(cycles)


def test_the_walk_sees_every_kind_of_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import b\n")  # a submodule named by `from . import`
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..a import name\n")  # inside a function
    (pkg / "c.py").write_text("import pkg.sub.b\nfrom pkg.sub import nothing_of_that_name\n")
    graph = import_graph(pkg)
    assert graph == {
        "pkg": set(),
        "pkg.a": {"pkg.sub.b"},
        "pkg.c": {"pkg.sub.b", "pkg.sub"},
        "pkg.sub": {"pkg.sub.b"},
        "pkg.sub.b": {"pkg.a"},
    }
    assert import_cycles(graph) == ["pkg.a -> pkg.sub.b -> pkg.a (all 2: pkg.a, pkg.sub.b)"]
    graph["pkg.sub.b"] = set()
    assert import_cycles(graph) == []


def app_classes(package: Path) -> list[str]:
    """`path:Class` of every class in the package whose bases name Textual's `App`."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(_names_app(base) for base in node.bases):
                found.append(f"{path.relative_to(package.parent)}:{node.name}")
    return found


def _names_app(base: ast.expr) -> bool:
    if isinstance(base, ast.Subscript):  # App[ResultType]
        base = base.value
    return (isinstance(base, ast.Name) and base.id == "App") or (isinstance(base, ast.Attribute) and base.attr == "App")


def test_the_package_has_one_textual_app():
    found = app_classes(PACKAGE)
    assert len(found) == 1, f"one App, screens inside it; found: {found}"
