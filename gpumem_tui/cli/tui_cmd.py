"""`gpumem-tui` with no command: the TUI on this node, a simulated node (--demo) or a recording (--replay)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli.errors import (
    NoSourceError,
    UsageError,
    endpoints_need_live,
    exit_status,
    register_input_error,
)
from gpumem_tui.cli.fleet_cmd import FAILED, connection_options, label_options, node_history_option, node_source
from gpumem_tui.cli.fleet_screen import INTERVAL_S as FLEET_INTERVAL_S
from gpumem_tui.cli.planargs import add_plan_options, manual_plan, seconds
from gpumem_tui.demo import DEFAULT_SCENARIO, load_scenario
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.demo.plan import scenario_plan
from gpumem_tui.diagnosis.fleet_node import with_fleet
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.glyphs import ASCII, for_terminal, to_ascii
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.feed import Feed, LiveFeed, ReplayFeed
from gpumem_tui.sources.host import HostSource
from gpumem_tui.sources.nvml import NvmlSource
from gpumem_tui.sources.pace import Pace
from gpumem_tui.sources.prometheus.client import PrometheusError
from gpumem_tui.sources.prometheus.node_feed import NodeFeed, prometheus_node_feed
from gpumem_tui.sources.prometheus.node_history import SPAN_S
from gpumem_tui.sources.prometheus.node_sample import NodeNotFound
from gpumem_tui.sources.replay import Recorder, RecordingError, ReplaySource

register_input_error(NodeNotFound)


NODE_IN_PROMETHEUS_S = FLEET_INTERVAL_S
"""A node read from Prometheus refreshes as the fleet screen does: dcgm-exporter collects every 30 s, and each
read is ten queries to a server others use too."""


def add_tui_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the TUI (no command)")
    source = group.add_mutually_exclusive_group()
    source.add_argument(
        "--demo",
        nargs="?",
        const=DEFAULT_SCENARIO,
        metavar="SCENARIO",
        help=f"a simulated node (default {DEFAULT_SCENARIO}); see `gpumem-tui snapshot --help`",
    )
    source.add_argument("--replay", metavar="FILE", help="play a recording made with --record")
    source.add_argument(
        "--prometheus", metavar="URL", help="a node of the fleet in this Prometheus (with --node): its series"
    )
    group.add_argument("--record", metavar="FILE", help="record every sample to this file (JSON Lines)")
    group.add_argument(
        "--endpoint",
        action="append",
        default=[],
        metavar="URL",
        help="an engine endpoint (live, or beside a --demo's simulated engines)",
    )
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
    group.add_argument("--speed", type=seconds(0.01, 10_000), default=1.0, help="demo or replay speed (default 1)")
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


def build_feed(args: argparse.Namespace) -> Feed:
    if args.prometheus is not None:
        return node_feed(args)
    if args.demo is not None:
        return DemoFeed.running(args.demo, speed=args.speed, reachable=True, endpoints=args.endpoint)
    if args.replay:
        pace = Pace()
        return ReplayFeed(ReplaySource(args.replay, clock=pace, speed=args.speed), args.replay, pace)
    host = HostSource()
    collector = Collector(NvmlSource(), host, source="nvml")
    return LiveFeed(collector, host.command_lines, args.endpoint, look=host.proc.whereabouts)


def node_feed(args: argparse.Namespace) -> NodeFeed:
    """The node's series in Prometheus, read once before the screen opens: a node no series names, or a
    server that does not answer, is one line and an exit status, not an empty screen."""
    if args.node is None:
        raise UsageError("--prometheus URL needs --node NAME (the fleet screen is `gpumem-tui fleet --prometheus URL`)")
    if args.endpoint:
        raise UsageError("--endpoint is for live engines; a node read from Prometheus brings its own")
    connection, queries, at = node_source(args, "")
    span = SPAN_S if args.node_history is None else args.node_history
    feed = prometheus_node_feed(connection, args.node, queries.matchers, at, args.query_timeout, span, queries.labels)
    try:
        asyncio.run(feed.sample())
    except PrometheusError as exc:
        raise NoSourceError(f"{FAILED.get(exc.kind, 'Prometheus failed')}: {exc}") from None
    return feed


def build_judge(args: argparse.Namespace) -> Judge:
    catalog = load_catalog(args.catalog)
    plan = scenario_plan(load_scenario(args.demo), catalog) if args.demo is not None else None
    plan = manual_plan(args, catalog) or plan
    return Judge(catalog, plan)


def check_record_path(path: str) -> None:
    """Refuse a --record file that cannot be written before the screen opens (a toast is easily missed):
    the same Recorder the app uses opens it; a file that was not there is removed again."""
    target = Path(path)
    existed = target.exists()
    try:
        Recorder(target).close()
    except RecordingError as exc:
        raise UsageError(f"--record: {exc}") from None
    if not existed:
        target.unlink(missing_ok=True)


def build_app(args: argparse.Namespace):
    """The app as `gpumem-tui` runs it; every argument is checked before anything is drawn."""
    from gpumem_tui.app.app import GpuMemApp

    endpoints_need_live(args, demo=True)
    if args.prometheus is None and (args.node is not None or args.at is not None):
        raise UsageError("--node and --at are for a node in Prometheus: give --prometheus URL too")
    if args.prometheus is None and args.node_history is not None:
        raise UsageError("--history is for a node in Prometheus: give --prometheus URL too")
    if args.record:
        check_record_path(args.record)
    judge = build_judge(args)
    feed = build_feed(args)
    return GpuMemApp(
        feed,
        judge,
        interval_s=args.interval or (NODE_IN_PROMETHEUS_S if isinstance(feed, NodeFeed) else 1.0),
        record_path=args.record,
        clock=time.time,
        theme=f"textual-{args.theme}",
        glyphs=for_terminal(args.ascii),
        also=with_fleet(feed, judge.thresholds) if isinstance(feed, NodeFeed) else None,
    )


def run_tui(args: argparse.Namespace) -> int:
    app = build_app(args)
    if app.glyphs is ASCII:
        # Textual writes to stderr: its borders and scrollbars reach the terminal as ASCII twins too.
        to_ascii(sys.__stderr__)
    app.run()
    return exit_status(app)
