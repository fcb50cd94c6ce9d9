"""A command's action, imported when the command runs: the options modules (`*_opts.py`) name it as
`module:function` of this package, so starting the command line loads none of the commands' code.

A process (`__main__.main`, then `program`) keeps the garbage collector off until that code is imported,
then freezes what was imported out of every later collection: imports make tens of thousands of long-lived
objects and no garbage. The command then runs with a roomy young generation (`gc_pause.roomy`): its records
make few cycles (CPython's default collected 85 times in `fleet check --demo`: 8 ms, 3 roomy). Nothing is
frozen when `main` is called from Python (tests), where earlier garbage could be frozen with it."""

from __future__ import annotations

import argparse
import gc
import importlib
from collections.abc import Callable

from gpumem_tui.sources.prometheus.gc_pause import freeze_imports, roomy

Action = Callable[[argparse.Namespace], int]
_collector_paused = False


def pause_collector() -> None:
    """Collect nothing until the command's code is imported (`action`); the process's start only."""
    global _collector_paused
    gc.disable()
    _collector_paused = True


def _imported() -> None:
    """The command's code is in: what is loaded now lives as long as the process, and is never collected; what
    the command makes is collected less often."""
    global _collector_paused
    if _collector_paused:
        freeze_imports()
        roomy()
        gc.enable()
        _collector_paused = False


def action(target: str) -> Action:
    """`plan_cmd:run` -> a function that imports `gpumem_tui.cli.plan_cmd` on its first call and runs `run`."""
    module, _, name = target.partition(":")

    def run(args: argparse.Namespace) -> int:
        command = getattr(importlib.import_module(f"gpumem_tui.cli.{module}"), name)
        _imported()
        return command(args)

    return run
