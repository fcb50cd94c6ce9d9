"""Shared fixtures: the packaged catalog, loaded once; the wheel, built once; the run's own temp directory; what
the suite's own process costs (the garbage collector over a heap the tests leave large, bytecode for the
interpreters tests start)."""

import gc
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpumem_tui.catalog import load_catalog

gc.set_threshold(50_000, 10, 10)
"""The collector's young generation holds 50,000 objects, not 700 (as the fleet reader sets it, sources/prometheus/
gc_pause.py). The suite's heap grows to millions of objects that stay (each simulated node's copy of the NVML
binding, whose ctypes types CPython never frees; Textual's caches), and each full collection walks all of
it: at the default, 30 % of the suite's CPU."""


def pytest_collection_finish():
    """What collection loaded (modules, the catalog, every test item) lives for the whole run: the collector
    need not walk it again at each full collection."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def models_waited(monkeypatch):
    """Engines' `/v1/models` answer is waited for as their `/metrics` is (the request still ends at its own read
    timeout). A scrape waits for it 0.5 s of the wall clock (MODELS_GRACE_S), then goes on without the served
    names for a minute: on a loaded machine a test's one scrape came without them, and its picture differed."""
    from gpumem_tui.sources.engines import scraper

    monkeypatch.setattr(scraper, "MODELS_GRACE_S", None)


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built from the checkout as `pip wheel` builds it (no dependencies, no isolation)."""
    dist = tmp_path_factory.mktemp("dist")
    root = Path(__file__).resolve().parents[1]
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(dist),
        str(root),
    ]
    build = subprocess.run(command, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    [built] = dist.glob("*.whl")
    return built


@pytest.fixture(scope="session", autouse=True)
def own_temp_directory(tmp_path_factory):
    """Whatever the code under test writes to the temp directory (a crash's traceback file above all, also
    from child processes through TMPDIR) lands in pytest's own, which pytest clears: never in /tmp, and
    never left behind by a test that failed before removing it."""
    where = str(tmp_path_factory.mktemp("tempdir"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", where)
        patch.setattr(tempfile, "tempdir", where)
        yield where


@pytest.fixture(scope="session", autouse=True)
def compiled_once():
    """The interpreters tests start (`python -m gpumem_tui ...`) read and write bytecode as a pip install or a
    plain `python` does, where the environment (CI's, this sandbox's) says PYTHONDONTWRITEBYTECODE: otherwise
    each one compiles the package from source again, a third of its CPU. What they run is the same source;
    the bytecode lands in __pycache__ folders, which git ignores."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        yield


@pytest.fixture(autouse=True)
def no_app_kept():
    """Textual's DataTable caches cell styles per table in a class-wide lru_cache: each test's tables (and so
    its whole app) would stay alive for the rest of the run, for the collector to walk again and again."""
    yield
    tables = sys.modules.get("textual.widgets._data_table")
    if tables is not None:
        tables.DataTable._get_styles_to_render_cell.cache_clear()
