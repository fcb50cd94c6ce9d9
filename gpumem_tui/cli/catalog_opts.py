"""`gpumem-tui catalog`: the options; the action (catalog_cmd.py) is imported when it runs."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.lazy import action


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "kind", nargs="?", choices=["models", "gpus", "formats"], default="models", help="what to list (default models)"
    )
    parser.add_argument("--catalog", action="append", default=[], metavar="DIR", help="extra catalog directory")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=action("catalog_cmd:run"))
