"""`gpumem-tui metrics`: the options; the action (metrics_cmd.py) is imported when it runs."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.lazy import action
from gpumem_tui.cli.planargs import seconds


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="FILE|URL", help="a saved payload, or http://HOST:PORT[/metrics]")
    parser.add_argument(
        "--timeout", type=seconds(0.1, 3600), default=2.0, metavar="S", help="read timeout for a URL (2 s)"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON list of records (docs/metrics-json.md)")
    parser.set_defaults(run=action("metrics_cmd:run"))
