"""`gpumem-tui` with no command: the TUI on this node, a simulated node (--demo), a recording (--replay) or a
node in Prometheus (the options: tui_opts.py)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.cli.errors import NoSourceError, UsageError, endpoints_need_live, exit_status
from gpumem_tui.cli.node_plan import build_judge
from gpumem_tui.cli.prometheus_source import node_source
from gpumem_tui.cli.tui_opts import NODE_IN_PROMETHEUS_S
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.fleet.node import with_fleet
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.glyphs import ASCII, for_terminal, to_ascii
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.feed import Feed, LiveFeed, ReplayFeed
from gpumem_tui.sources.host import HostSource
from gpumem_tui.sources.nvml import NvmlSource
from gpumem_tui.sources.pace import Pace
from gpumem_tui.sources.prometheus.client import PrometheusError
from gpumem_tui.sources.prometheus.node_feed import NodeFeed, prometheus_node_feed
from gpumem_tui.sources.prometheus.node_history import SPAN_S
from gpumem_tui.sources.replay import Recorder, RecordingError, ReplaySource


def build_feed(args: argparse.Namespace) -> Feed:
    if args.prometheus is not None:
        return node_feed(args)
    if args.demo is not None:
        return DemoFeed.running(args.demo, speed=args.speed, endpoints=args.endpoint)
    if args.replay:
        pace = Pace()
        return ReplayFeed(ReplaySource(args.replay, clock=pace, speed=args.speed), args.replay, pace)
    host = HostSource()
    collector = Collector(NvmlSource(), host, source="nvml")
    return LiveFeed(collector, host.command_lines, args.endpoint, look=host.proc.whereabouts)


def node_feed(args: argparse.Namespace) -> NodeFeed:
    """The node's series in Prometheus, first read by the screen (drawn at once, `q` taken while a slow server
    answers): a node no series names, or a server that does not answer, ends it (`ended`)."""
    if args.node is None:
        raise UsageError("--prometheus URL needs --node NAME (the fleet screen is `gpumem-tui fleet --prometheus URL`)")
    if args.endpoint:
        raise UsageError("--endpoint is for live engines; a node read from Prometheus brings its own")
    connection, queries, at = node_source(args, "")
    span = SPAN_S if args.node_history is None else args.node_history
    return prometheus_node_feed(
        connection, args.node, queries.matchers, at, args.query_timeout, span, queries.labels, stale=stale
    )


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


def build_app(args: argparse.Namespace) -> GpuMemApp:
    """The app as `gpumem-tui` runs it; every argument is checked before anything is drawn."""
    endpoints_need_live(args, None)
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
    return ended(app)


def ended(app: GpuMemApp) -> int:
    """The app's exit status; a first read that ended the screen (a node not there, a server that does not
    answer) raised as the one line it is: bad input (2) or no source (3)."""
    error = app.node.ended_by if app.node is not None else None
    if isinstance(error, PrometheusError):
        raise NoSourceError(error.said())
    if error is not None:
        raise error
    return exit_status(app)
