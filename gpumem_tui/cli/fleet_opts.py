"""`gpumem-tui fleet [snapshot|check|rules]`: the options, and the Prometheus options `check` and the TUI take
for one node of the fleet. Each action's code is imported when it runs (fleet_cmd.py; the screen:
fleet_screen.py)."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.lazy import action
from gpumem_tui.cli.option_places import BothPlaces
from gpumem_tui.cli.planargs import seconds
from gpumem_tui.sources.prometheus.labels import NODE_CHOICES, POD_CHOICES
from gpumem_tui.sources.prometheus.query_limits import QUERY_TIMEOUT_S

INTERVAL_S = 15.0
"""Seconds between the fleet screen's reads unless --interval says."""


def options(parser: argparse.ArgumentParser) -> None:
    # no action: the fleet screen (cli/fleet_screen.py) on the source these options name
    _source_options(parser)
    # the screen's own: dests apart from snapshot's --history, so one given before an action is seen
    parser.add_argument(
        "--interval",
        dest="screen_interval",
        type=_seconds,
        metavar="SECONDS",
        help=f"seconds between reads (default {INTERVAL_S:g})",
    )
    parser.add_argument(
        "--history",
        dest="screen_history",
        type=_span,
        metavar="SPAN",
        help="how far back the history line looks: 30m, 1h (default), 6h ... (range queries, read once a minute)",
    )
    parser.set_defaults(run=action("fleet_cmd:run_screen"))
    # options given both before the action and after it: repeatable ones merged, two values refused
    actions = parser.add_subparsers(
        dest="fleet_command", metavar="ACTION", parser_class=type(parser), action=BothPlaces
    )
    snapshot = actions.add_parser("snapshot", help="one fleet sample: nodes, GPUs, engines, coverage")
    _source_options(snapshot, action=True)
    snapshot.add_argument("--json", action="store_true", help="print JSON (schema: docs/fleet-json.md)")
    snapshot.add_argument(
        "--history",
        type=_span,
        metavar="SPAN",
        help="also the fleet over the SPAN before the moment (30m, 1h, 6h ...): memory, KV, queue, preemptions",
    )
    snapshot.set_defaults(run=action("fleet_cmd:run_snapshot"))
    check = actions.add_parser(
        "check", help="fleet findings, as a monitoring plugin (exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN)"
    )
    _source_options(check, action=True)
    check.add_argument("--json", action="store_true", help="print JSON (schema: docs/fleet-json.md)")
    check.set_defaults(run=action("fleet_cmd:run_check"))
    _rules_options(
        actions.add_parser(
            "rules",
            help="a Prometheus rule group: the overview's per-node figures, computed by the server (recording "
            "rules), or with --alerts the alerts on the exporter's findings",
        )
    )


def _rules_options(rules: argparse.ArgumentParser) -> None:
    rules.add_argument(
        "--selector",
        default=argparse.SUPPRESS,
        metavar="'{label=\"value\"}'",
        help="record (with --alerts: alert on) only these series, keeping these labels",
    )
    rules.add_argument(
        "--interval",
        dest="rule_interval",
        type=int,
        metavar="SECONDS",
        help="the group's evaluation interval (default 30: dcgm-exporter's collection interval; with --alerts, "
        "the scrape interval)",
    )
    rules.add_argument(
        "--alerts",
        action="store_true",
        help="the alerting rules on `gpumem-tui export`'s findings instead: one alert per finding code",
    )
    rules.add_argument(
        "--kubernetes",
        action="store_true",
        help="both groups, the recording rules and the alerts, as one PrometheusRule for the Prometheus operator "
        "(deploy/kubernetes/prometheusrule.yaml is this with no other option)",
    )
    rules.add_argument(
        "--namespace",
        metavar="NAME",
        help="with --kubernetes: the PrometheusRule's namespace (default gpumem-tui)",
    )
    rules.add_argument(
        "--scrape-interval",
        type=int,
        metavar="SECONDS",
        help="with --alerts or --kubernetes: how often Prometheus scrapes the exporter (default 15); a critical "
        "finding pages "
        "after 2 of them, a warning after 20",
    )
    rules.set_defaults(run=action("fleet_rules_cmd:run_rules"))


def _source_options(parser: argparse.ArgumentParser, action: bool = False) -> None:
    """The source options, on `fleet` and again on each action. An action's own defaults are never set
    (`SUPPRESS`), so what was given before the action (`fleet --selector X check`) is kept: argparse lets a
    subcommand's defaults overwrite them. Which source is checked once parsed (`source_given`)."""
    unset: dict = {"default": argparse.SUPPRESS} if action else {}
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--prometheus", metavar="URL", help="the query API's base URL", **unset)
    source.add_argument(
        "--demo",
        dest="fleet_demo",
        action="store_true",
        help="a simulated fleet of nodes from the demo scenarios, computed here (no Prometheus needed)",
        **unset,
    )
    parser.add_argument(
        "--at", metavar="TIME", help="evaluate at this moment: Unix seconds or RFC 3339 (default: now)", **unset
    )
    connection_options(parser, action)
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--overview",
        action="store_true",
        help="per-node figures aggregated on the server, GPUs one by one only on nodes that need a look (the "
        "default of check and the screen; docs/fleet.md)",
        **unset,
    )
    how.add_argument(
        "--full",
        action="store_true",
        help="every GPU one by one (the default of snapshot): an answer that grows with GPUs",
        **unset,
    )
    label_options(parser, action)
    parser.add_argument(
        "--model-alias",
        action="append",
        metavar="SERVED=ORG/MODEL",
        help="the catalog model a served model name stands for (repeatable), so its engines get a plan",
        **(unset or {"default": []}),
    )
    parser.add_argument(
        "--catalog", action="append", metavar="DIR", help="extra catalog directory", **(unset or {"default": []})
    )


def label_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, action: bool = False) -> None:
    """Which labels name a node and a pod: the fleet's commands, and `check`/the TUI on one of its nodes (so
    the node is the one the fleet names). `action`: on a fleet action, whose defaults are never set."""
    unset: dict = {"default": argparse.SUPPRESS} if action else {}
    parser.add_argument(
        "--node-label",
        choices=NODE_CHOICES,
        **(unset or {"default": "auto"}),
        help="the label of dcgm-exporter's series that names the node (default auto: Hostname, hostname, node, "
        "kubernetes_node, then instance's host)",
    )
    parser.add_argument(
        "--pod-label",
        choices=POD_CHOICES,
        **(unset or {"default": "auto"}),
        help="the label of dcgm-exporter's series that names the workload pod holding a GPU (default auto: "
        "exported_pod when present, else pod)",
    )


def connection_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, action: bool = False) -> None:
    """How to reach and narrow a Prometheus: the fleet's commands, and `check`/the TUI on one of its nodes.
    `action`: on a fleet action, whose defaults are never set (`_source_options`)."""
    unset: dict = {"default": argparse.SUPPRESS} if action else {}
    parser.add_argument(
        "--selector",
        metavar="'{label=\"value\"}'",
        help="label matchers added to every query (one cluster, a tenant)",
        **unset,
    )
    parser.add_argument(
        "--header",
        action="append",
        metavar="'NAME: VALUE'",
        help="an HTTP header (repeatable)",
        **(unset or {"default": []}),
    )
    parser.add_argument(
        "--bearer-token-file", metavar="FILE", help="send the token in this file as a bearer token", **unset
    )
    parser.add_argument("--username", metavar="NAME", help="basic auth: the user (a user in the URL is too)", **unset)
    parser.add_argument(
        "--password-file", metavar="FILE", help="basic auth: the user's password, read from this file", **unset
    )
    parser.add_argument("--ca-file", metavar="FILE", help="trust the server certificates this CA file signs", **unset)
    parser.add_argument(
        "--query-timeout",
        type=_seconds,
        **(unset or {"default": QUERY_TIMEOUT_S}),
        metavar="SECONDS",
        help=f"what the server may take per query (default {QUERY_TIMEOUT_S:g}); the client waits 2 s longer",
    )


def node_history_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup, what: str) -> None:
    """`--history SPAN` of `check`/the TUI on one node: how far back its forensics reads (`what`: who reads)."""
    parser.add_argument(
        "--history",
        dest="node_history",
        type=_span,
        metavar="SPAN",
        help=f"how far back {what} reads the node's series: 30m, 1h (default), 6h ... (range queries)",
    )


_seconds = seconds(0.1, 3600)
"""--interval and --query-timeout: at least 0.1 s (a Prometheus answers no faster), at most an hour."""


def _span(text: str) -> float:
    # imported when a span is given: the fleet's history reader is no cost of every command's start
    from gpumem_tui.sources.prometheus.history import parse_span

    try:
        return parse_span(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--history ")) from None
