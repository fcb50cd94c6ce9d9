"""The layering rules: every module imports only its own layer or lower ones (LAYERS, the one list of them);
the core never loads Textual or Rich; no one-shot command loads Textual; each vendor library lives in one
module."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpumem_tui.cli.check_text import STYLING
from tests.datafiles import DATA, METRICS

PACKAGE = Path(__file__).resolve().parents[1] / "gpumem_tui"
UI_PARTS = {"app", "cli"}

LAYERS: tuple[tuple[str, ...], ...] = (
    # Top to bottom. A module may import its own layer or any layer on a lower row; layers on one row
    # are siblings and never import each other.
    ("cli",),  # composition root: arguments, feeds, plans; prints or runs the app
    ("app",),  # the Textual front end of a feed and a judge (state, workers, screens, widgets)
    ("demo",),  # the simulated node, its feed and its plans; the simulated fleet
    ("export",),  # the Prometheus front end of a feed and a judge (the simulated fleet publishes through it)
    ("diagnosis",),  # plan versus actual -> findings
    ("planner", "sources"),  # pure arithmetic | data collection (NVML, host, engines, recordings)
    ("catalog",),  # catalog/*.toml and Hugging Face config files -> records
    ("base",),  # the records every layer passes on, units and literal text
)
AT_ROOT = {  # modules at the package root, by layer
    "__main__": "cli",
    "__init__": "base",
    "models": "base",
    "records": "base",
    "engine_records": "base",
    "readings": "base",
    "units": "base",
    "text": "base",
    "glyphs": "base",
    "cuda_order": "base",
    "package_data": "base",
    "lazy_names": "base",
}
ROW = {layer: row for row, layers in enumerate(LAYERS) for layer in layers}


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
    code = (
        "import importlib, sys\n"
        + "".join(f"importlib.import_module({m!r})\n" for m in modules)
        + ("bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\nprint(','.join(bad))\n")
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core loaded: {out.stdout.strip()}"


def _importers(library: str) -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            if any(name.split(".")[0] == library for name in names):
                found.add(str(path.relative_to(PACKAGE)))
    return found


ONE_SHOT = [  # (arguments, exit status): each command run to its end, as a shell or cron runs it
    (["plan", "--model", "llama-3.1-8b", "--gpu", "h100"], 0),
    (["check", "--demo", "idle-node"], 0),
    (["snapshot", "--demo", "idle-node"], 0),
    (["fit", "--model", "llama-3.1-8b", "--gpu", "h100", "--weights", "bf16"], 0),
    (["catalog", "gpus"], 0),
    (["log", str(DATA / "vllm_0.19_gemma-2-27b_started.log"), "--compare"], 0),
    (["metrics", str(METRICS / "sglang_docs_production_metrics_llama31_8b.prom")], 0),
    # its action runs as far as the feed, which refuses a moment past the scenario's end before serving
    (["export", "--demo", "idle-node", "--at", "9999999"], 2),
    (["fleet", "check", "--demo"], 2),
    (["fleet", "snapshot", "--demo"], 0),
    (["--version"], 0),
]
LOADED_TEXTUAL = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print('textual:', *sorted(m for m in sys.modules if m.split('.')[0] == 'textual'),"
    " file=sys.stderr))\n"
    "sys.argv[0] = 'gpumem-tui'\n"
    "runpy.run_module('gpumem_tui', run_name='__main__')\n"
)
"""`python -m gpumem_tui ARGS` that says, last on stderr, the textual modules loaded when it exits."""


@pytest.mark.parametrize(("argv", "status"), ONE_SHOT, ids=[" ".join(a[: 1 + (a[0] == "fleet")]) for a, _ in ONE_SHOT])
def test_no_one_shot_command_loads_textual(argv, status):
    """`check` runs every minute on every node and `plan` in CI: the TUI's code is imported only to run it."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED_TEXTUAL, *argv], capture_output=True, text=True, cwd=PACKAGE.parent
    )
    assert done.returncode == status, done.stderr
    loaded = done.stderr.splitlines()[-1].split()
    assert loaded == ["textual:"], f"{' '.join(argv)} loaded {len(loaded) - 1} textual modules: {loaded[1:4]} ..."


def test_planner_does_no_io_and_never_imports_sources():
    for library in ("httpx", "psutil", "pynvml", "socket"):
        assert not {p for p in _importers(library) if p.startswith("planner")}
    for path in (PACKAGE / "planner").rglob("*.py"):
        assert "gpumem_tui.sources" not in path.read_text(encoding="utf-8"), path


def test_the_live_feed_loads_neither_the_simulator_nor_the_catalog_nor_the_planner():
    code = (
        "import sys, gpumem_tui.sources.feed\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[:2] in (\n"
        "    ['gpumem_tui', 'demo'], ['gpumem_tui', 'catalog'], ['gpumem_tui', 'planner']))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing the live feed loaded: {out.stdout.strip()}"


def _layer(parts: tuple[str, ...]) -> str:
    """The layer of gpumem_tui's module or package named by `parts` (after "gpumem_tui")."""
    top = parts[0] if parts else "__init__"
    layer = AT_ROOT.get(top, top)
    assert layer in ROW, f"gpumem_tui.{top} is in no layer: give it one in LAYERS or AT_ROOT"
    return layer


def _is_module(name: str) -> bool:
    return (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file()


def _imported(tree: ast.AST) -> set[tuple[str, ...]]:
    """gpumem_tui's modules a module imports, anywhere in it (inside functions too), as parts after the package."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {tuple(a.name.split(".")[1:]) for a in node.names if a.name.split(".")[0] == "gpumem_tui"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "gpumem_tui":
            parts = tuple(node.module.split(".")[1:])
            found |= {parts} if parts else {(a.name,) if _is_module(a.name) else ("__init__",) for a in node.names}
    return found


def upward_imports() -> list[str]:
    """Each import of a module from a higher layer or a sibling one, as "importer -> imported (layers)"."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        mine = _layer(parts)
        for target in sorted(_imported(ast.parse(path.read_text(encoding="utf-8")))):
            theirs = _layer(target)
            if theirs != mine and ROW[theirs] <= ROW[mine]:
                wrong.append(f"{'/'.join(parts)}.py -> gpumem_tui.{'.'.join(target)} ({mine} -> {theirs})")
    return wrong


def test_every_module_imports_only_its_own_layer_or_lower_ones():
    assert upward_imports() == []


def test_the_layer_rule_sees_an_upward_and_a_sideways_import():
    assert _imported(ast.parse("from gpumem_tui.planner.kv import x\nimport gpumem_tui.app.app")) == {
        ("planner", "kv"),
        ("app", "app"),
    }
    assert _imported(ast.parse("def f():\n    from gpumem_tui import __version__, units")) == {
        ("__init__",),
        ("units",),
    }
    assert ROW[_layer(("sources", "feed"))] == ROW[_layer(("planner", "kv"))]  # siblings: sideways is refused
    assert ROW[_layer(("models",))] > ROW[_layer(("diagnosis", "judge"))]


LOADED = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print('loaded:', *sorted(sys.modules), file=sys.stderr))\n"
    "sys.argv[0] = 'gpumem-tui'\n"
    "runpy.run_module('gpumem_tui', run_name='__main__')\n"
)
"""`python -m gpumem_tui ARGS` that says, last on stderr, every module loaded when it exits."""
PLAN = ["plan", "--model", "llama-3.1-8b", "--gpu", "h100"]
LIGHT = [  # (arguments, exit status, what it must not load): each command pays only for what it uses
    (
        [*PLAN],
        0,
        ("httpx", "pynvml", "psutil", "ssl", "asyncio", "gpumem_tui.demo.scenario", "gpumem_tui.sources.http"),
    ),
    ([*PLAN, "--json"], 0, ("rich",)),
    (
        ["check", "--demo", "idle-node"],
        0,
        # the simulated node is sampled in process: no mock servers, event loop, HTTP client or scraper
        (
            "pynvml",
            "psutil",
            "pydantic_settings",
            "gpumem_tui.sources.prometheus.fleet",
            "asyncio",
            "httpx",
            "gpumem_tui.demo.feed",
            "gpumem_tui.sources.engines.scraper",
        ),
    ),
    (["check", "--demo", "idle-node", "--json"], 0, ("rich",)),
    (["check", "--demo", "noisy-neighbour", "--at", "48"], 2, ("rich",)),  # text on a pipe: check_text.on_pipe
    (["fleet", "check", "--demo", "--json"], 2, ("rich",)),
    (
        ["fleet", "check", "--demo"],
        2,
        ("rich", "asyncio", "gpumem_tui.sources.feed", "gpumem_tui.sources.prometheus.history"),
    ),
    (["--version"], 0, ("pydantic", "rich", "gpumem_tui.catalog", "gpumem_tui.planner.vllm.predict")),
]


@pytest.fixture(scope="module")
def click_installed(tmp_path_factory):
    """A folder holding a stand-in for click that loads rich when imported (as httpx's tool does after it), then
    fails as a missing package would."""
    folder = tmp_path_factory.mktemp("site")
    (folder / "click").mkdir()
    (folder / "click" / "__init__.py").write_text("import rich.console\nraise ImportError('a stand-in for click')\n")
    return folder


def test_httpx_comes_without_its_tool_and_click_is_still_importable(click_installed):
    env = {**os.environ, "PYTHONPATH": str(click_installed)}
    code = (
        "import sys\nfrom gpumem_tui.sources import http\nhttp.prepare()\n"
        "print('httpx' in sys.modules, 'click' in sys.modules, 'rich' in sys.modules)\n"
        "try:\n    import click\nexcept ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, env=env)
    assert done.stdout.splitlines() == ["True False False", "a stand-in for click"], done.stderr


@pytest.mark.parametrize(("argv", "status", "unloaded"), LIGHT, ids=[" ".join(a) for a, _, _ in LIGHT])
def test_a_one_shot_command_loads_only_what_it_uses(argv, status, unloaded, click_installed):
    """`check` from cron and `plan` in CI are timed in CPU (bench/light.py): what a command never uses is never
    imported (`plan` needs no HTTP client, NVML, host or simulator; JSON needs no rich). click is installed, as on
    many nodes: httpx then loads its command-line tool, and rich with it, unless sources/http.py keeps it out."""
    env = {k: v for k, v in os.environ.items() if k not in STYLING}  # check on a pipe, as cron has it
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(click_installed), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *argv], capture_output=True, text=True, cwd=PACKAGE.parent, env=env
    )
    assert done.returncode == status, done.stderr
    loaded = done.stderr.splitlines()[-1].split()[1:]
    found = [m for m in loaded if any(m == name or m.startswith(f"{name}.") for name in unloaded)]
    assert found == [], f"{' '.join(argv)} loaded {found[:5]}"
