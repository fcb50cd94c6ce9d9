"""The collector in a command's process (cli/lazy.py): off while the command's code is imported, then on, with
what was imported frozen and a roomy young generation for what the command makes."""

from __future__ import annotations

import subprocess
import sys

from gpumem_tui.sources.prometheus.gc_pause import YOUNG

RUN = (
    "import gc, sys\n"
    "from gpumem_tui.cli import program\n"
    "sys.argv = ['gpumem-tui', 'plan', '--model', 'llama-3.1-8b', '--gpu', 'h100', '--json']\n"
    "program()\n"
    "print(gc.isenabled(), gc.get_threshold()[0], gc.get_freeze_count() > 10_000, file=sys.stderr)\n"
)


def test_a_command_runs_collecting_with_its_imports_frozen_and_a_roomy_young_generation():
    done = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, check=True)
    enabled, young, frozen = done.stderr.split()
    assert (enabled, frozen) == ("True", "True")
    assert int(young) >= YOUNG
