"""`gpumem-tui check`: the options; the action (check_cmd.py) is imported when it runs."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.fleet_opts import connection_options, label_options, node_history_option
from gpumem_tui.cli.lazy import action
from gpumem_tui.cli.planargs import add_plan_options
from gpumem_tui.cli.source_opts import add_endpoint, add_moment, add_sources


def options(parser: argparse.ArgumentParser) -> None:
    add_sources(
        parser,
        demo=" (default {default}): {shipped}",
        replay="a recording: findings at --at (default: the end); -v adds its forensics",
        prometheus="a node of the fleet in this Prometheus (with --node): its series judged",
    )
    add_moment(
        parser,
        "seconds into the scenario (default: the moment that shows its story) or the recording (default: the "
        "end); with --prometheus, a moment: Unix seconds or RFC 3339 (default: now)",
        in_seconds=False,
    )
    add_endpoint(parser)
    parser.add_argument("--json", action="store_true", help="print JSON (schema: docs/check-json.md)")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="also what each plan found and assumed, and the forensics"
    )
    add_plan_options(
        parser.add_argument_group("a plan to check against (default: one made from what is running)"),
        "check against a plan",
    )
    fleet_node = parser.add_argument_group("a node in Prometheus (--prometheus URL --node NAME; docs/fleet.md)")
    fleet_node.add_argument(
        "--node", metavar="NAME", help="the node, as dcgm-exporter's Hostname/hostname (or --node-label) names it"
    )
    node_history_option(fleet_node, "-v's forensics")
    connection_options(fleet_node)
    label_options(fleet_node)
    parser.set_defaults(run=action("check_cmd:run"))
