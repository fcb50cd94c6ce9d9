"""The collector in a command's process (__main__.py, cli/lazy.py): off from the first import until the
command's code is in, then on, with what was imported frozen and a roomy young generation."""

from __future__ import annotations

import subprocess
import sys

from gpumem_tui.sources.prometheus.gc_pause import YOUNG

RUN = (
    "import gc, sys\n"
    "early = []\n"
    "gc.callbacks.append(lambda phase, info: early.append(1) if 'gpumem_tui.cli.plan_cmd' not in sys.modules "
    "else None)\n"
    "from gpumem_tui.__main__ import main\n"
    "sys.argv = ['gpumem-tui', 'plan', '--model', 'llama-3.1-8b', '--gpu', 'h100', '--json']\n"
    "main()\n"
    "print(len(early), gc.isenabled(), gc.get_threshold()[0], gc.get_freeze_count() > 10_000, file=sys.stderr)\n"
)


def test_a_command_collects_only_once_its_code_is_in_with_its_imports_frozen_and_a_roomy_young_generation():
    done = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, check=True)
    early, enabled, young, frozen = done.stderr.split()
    assert early == "0", "no collection while the command line and the command's code are imported"
    assert (enabled, frozen) == ("True", "True")
    assert int(young) >= YOUNG
