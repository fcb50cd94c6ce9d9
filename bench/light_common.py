"""What every part of `bench/light.py` shares: a figure row, the CPU of a whole process, and the baseline.

A one-shot command's cost is the user + system CPU of its whole process (interpreter start-up and imports
included), compared with the baseline measured in the same run: a process that only imports pydantic and
httpx. Ratios hold on a noisy machine where seconds do not. Modules are byte-compiled first, as a pip
install leaves them, so that a session with PYTHONDONTWRITEBYTECODE set measures what users run.
"""

from __future__ import annotations

import compileall
import os
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = (sys.executable, "-c", "import pydantic, httpx")


@dataclass(frozen=True)
class Figure:
    """One row of the table: what is measured, how it reads now, the goal, and whether it holds."""

    what: str
    shown: str
    goal: str
    met: bool


def environment() -> dict[str, str]:
    """The environment for measured processes: this checkout first on the path, bytecode written and read."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_package() -> None:
    """Byte-compile the package once, as `pip install` does, so no measured process compiles source."""
    compileall.compile_dir(str(ROOT / "gpumem_tui"), quiet=1)


def cpu_of(argv: tuple[str, ...] | list[str], *, stdin: bytes | None = None) -> float:
    """User + system CPU seconds of one whole process (and any it starts), its output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(argv: tuple[str, ...] | list[str], runs: int) -> float:
    """The median of `runs` measurements (after one to warm the file cache)."""
    cpu_of(argv)
    return statistics.median(cpu_of(argv) for _ in range(runs))


def baseline_cpu(runs: int) -> float:
    """CPU seconds of a process that imports pydantic and httpx: the unit of every one-shot ratio."""
    return median_cpu(BASELINE, runs)
