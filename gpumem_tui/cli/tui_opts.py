"""`gpumem-tui` with no command: the TUI's options. Its code, and Textual, are imported when it runs
(tui_cmd.py)."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.fleet_opts import INTERVAL_S, connection_options, label_options, node_history_option
from gpumem_tui.cli.lazy import action
from gpumem_tui.cli.planargs import add_plan_options, number, seconds
from gpumem_tui.cli.source_opts import add_endpoint, add_sources

NODE_IN_PROMETHEUS_S = INTERVAL_S
"""A node read from Prometheus refreshes as the fleet screen does: dcgm-exporter collects every 30 s, and each
read is ten queries to a server others use too."""


def add_tui_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the TUI (no command)")
    add_sources(
        group,
        demo=" (default {default}); see `gpumem-tui snapshot --help`",
        replay="play a recording made with --record",
        prometheus="a node of the fleet in this Prometheus (with --node): its series",
    )
    group.add_argument("--record", metavar="FILE", help="record every sample to this file (JSON Lines)")
    add_endpoint(group, ", or beside a --demo's simulated engines")
    group.add_argument(
        "--interval",
        type=seconds(0.1, 3600),
        metavar="SECONDS",
        help=f"refresh every (default 1; {NODE_IN_PROMETHEUS_S:g} for a node in Prometheus, whose series change only "
        "as often as they are scraped; at least 0.1)",
    )
    group.add_argument(
        "--theme",
        choices=["dark", "light"],
        default="dark",
        help="colours for a dark or a light terminal (NO_COLOR is honoured either way)",
    )
    group.add_argument(
        "--speed", type=number(0.01, 10_000, "times real time"), default=1.0, help="demo or replay speed (default 1)"
    )
    group.add_argument(
        "--ascii",
        action="store_true",
        help="draw bars and sparklines in ASCII (the default when the terminal is not UTF-8)",
    )
    add_plan_options(
        parser.add_argument_group("a plan to draw over the GPUs (default: from what runs)"), "preload a plan"
    )
    fleet_node = parser.add_argument_group("a node in Prometheus (--prometheus URL --node NAME; docs/fleet.md)")
    fleet_node.add_argument(
        "--node", metavar="NAME", help="the node, as dcgm-exporter's Hostname/hostname (or --node-label) names it"
    )
    fleet_node.add_argument(
        "--at", metavar="TIME", help="read the node as it was then: Unix seconds or RFC 3339 (default: now)"
    )
    node_history_option(fleet_node, "forensics (`f`)")
    connection_options(fleet_node)
    label_options(fleet_node)


run_tui = action("tui_cmd:run_tui")
"""The TUI (no command), Textual imported when it runs."""
