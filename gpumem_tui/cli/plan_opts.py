"""`gpumem-tui plan`: the options; the action (plan_cmd.py) is imported when it runs."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.engine_opts import add_engine_options
from gpumem_tui.cli.lazy import action
from gpumem_tui.cli.planargs import add_load_options, add_model_options


def options(parser: argparse.ArgumentParser) -> None:
    add_model_options(parser)
    add_load_options(parser)
    add_engine_options(parser)
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when the plan does not fit or the engine refuses its context (for CI)",
    )
    parser.set_defaults(run=action("plan_cmd:run"))
