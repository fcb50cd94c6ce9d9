"""The project's checkers run with its tests: one command runs ruff, ruff's format check and mypy
(their rules in pyproject.toml)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_finds_nothing():
    out = _run("ruff", "check", "gpumem_tui", "tests", "bench")
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format_changes_nothing():
    out = _run("ruff", "format", "--check", "gpumem_tui", "tests", "bench")
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_finds_nothing():
    out = _run("mypy")  # what it checks, and how strictly: [tool.mypy]
    assert out.returncode == 0, out.stdout + out.stderr
