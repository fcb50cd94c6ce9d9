"""A command's action, imported when the command runs: the options modules (`*_opts.py`) name it as
`module:function` of this package, so starting the command line loads none of the commands' code."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

Action = Callable[[argparse.Namespace], int]


def action(target: str) -> Action:
    """`plan_cmd:run` -> a function that imports `gpumem_tui.cli.plan_cmd` on its first call and runs `run`."""
    module, _, name = target.partition(":")

    def run(args: argparse.Namespace) -> int:
        return getattr(importlib.import_module(f"gpumem_tui.cli.{module}"), name)(args)

    return run
