"""`gpumem-tui snapshot`: the options; the action (snapshot_cmd.py) is imported when it runs."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.lazy import action
from gpumem_tui.cli.source_opts import add_moment, add_sources


def options(parser: argparse.ArgumentParser) -> None:
    add_sources(
        parser,
        demo=" instead of this one (default {default}): {shipped}, or a .toml file",
        replay="a recording made with --record (default: its last sample)",
    )
    add_moment(parser, "seconds into the scenario (default: the moment that shows its story) or the recording")
    parser.add_argument("--record", metavar="FILE", help="append the sample to this recording (JSON Lines)")
    parser.add_argument("--json", action="store_true", help="print JSON (schema: docs/snapshot-json.md)")
    parser.set_defaults(run=action("snapshot_cmd:run"))
