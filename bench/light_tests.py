"""The README's test command, as CI runs it on a clean checkout: its CPU (user + system, install included).

The repository's HEAD (committed work only) is cloned into a temporary folder with a fresh virtual
environment, and the second command of the README's Quickstart runs there with that environment first on
PATH, in this process's environment otherwise (so PYTHONDONTWRITEBYTECODE, where set, holds as it does in
CI). Creating the environment is not counted; everything the command starts is. `--quick` skips it: the
whole suite takes minutes of both cores.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from light_common import ROOT, Figure

GOAL_S = 420.0


def readme_test_command(readme: Path = ROOT / "README.md") -> str:
    """The second command of the Quickstart's shell block: the one the README says runs the whole suite."""
    quickstart = readme.read_text(encoding="utf-8").split("## Quickstart", 1)[1]
    block = re.search(r"```sh\n(.*?)```", quickstart, re.DOTALL)
    if block is None:
        raise ValueError("README.md: no ```sh block under ## Quickstart")
    return block.group(1).strip().splitlines()[1]


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_clean(command: str) -> tuple[int, float, float, str]:
    """Exit status, CPU seconds, wall seconds and the output's tail of `command` on a fresh clone of HEAD
    (stderr's, then stdout's, so that pytest's summary of what failed comes last)."""
    with tempfile.TemporaryDirectory(prefix="gpumem-light-tests-") as folder:
        checkout, venv = Path(folder) / "checkout", Path(folder) / "venv"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(checkout)], check=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        env = dict(os.environ, VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
        env.pop("PYTHONPATH", None)  # the clone's own package, as CI imports it
        before, started = children_cpu(), time.monotonic()
        done = subprocess.run(["bash", "-c", command], cwd=checkout, env=env, capture_output=True, text=True)
        cpu, wall = children_cpu() - before, time.monotonic() - started
    return done.returncode, cpu, wall, done.stderr[-1000:] + done.stdout[-3000:]


def figures(base_cpu_s: float, quick: bool) -> list[Figure]:  # noqa: ARG001 - a whole run, not a ratio
    command = readme_test_command()
    what = f"`{command}`, CPU"
    if quick:
        return [Figure(what, "skipped (--quick)", f"<= {GOAL_S:.0f} s", True)]
    code, cpu, wall, tail = run_clean(command)
    if code != 0:
        print(tail, file=sys.stderr)
        return [Figure(what, f"failed (exit {code})", f"<= {GOAL_S:.0f} s", False)]
    note = "" if shutil.which("prometheus") else ", no prometheus: its tests skipped"
    return [Figure(what, f"{cpu:.0f} s ({wall:.0f} s wall{note})", f"<= {GOAL_S:.0f} s", cpu <= GOAL_S)]


if __name__ == "__main__":
    print(readme_test_command())
