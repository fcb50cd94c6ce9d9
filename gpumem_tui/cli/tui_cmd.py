"""`gpumem-tui` with no command: the TUI on this node, a simulated node (--demo) or a recording (--replay)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli.errors import CRASH, UsageError, crashed, endpoints_need_live, report
from gpumem_tui.cli.planargs import add_plan_options, manual_plan, seconds
from gpumem_tui.demo import DEFAULT_SCENARIO, load_scenario
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.demo.plan import scenario_plan
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.glyphs import ASCII, for_terminal, to_ascii
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.feed import Feed, LiveFeed, ReplayFeed
from gpumem_tui.sources.host import HostSource
from gpumem_tui.sources.nvml import NvmlSource
from gpumem_tui.sources.pace import Pace
from gpumem_tui.sources.replay import Recorder, RecordingError, ReplaySource


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
        default=1.0,
        metavar="SECONDS",
        help="refresh every (default 1, at least 0.1)",
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


def build_feed(args: argparse.Namespace) -> Feed:
    if args.demo is not None:
        return DemoFeed.running(args.demo, speed=args.speed, reachable=True, endpoints=args.endpoint)
    if args.replay:
        pace = Pace()
        return ReplayFeed(ReplaySource(args.replay, clock=pace, speed=args.speed), args.replay, pace)
    host = HostSource()
    collector = Collector(NvmlSource(), host, source="nvml")
    return LiveFeed(collector, host.command_lines, args.endpoint, look=host.proc.whereabouts)


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
    from gpumem_tui.app import GpuMemApp

    endpoints_need_live(args, demo=True)
    if args.record:
        check_record_path(args.record)
    judge = build_judge(args)
    feed = build_feed(args)
    return GpuMemApp(
        feed,
        judge,
        interval_s=args.interval,
        record_path=args.record,
        clock=time.time,
        theme=f"textual-{args.theme}",
        glyphs=for_terminal(args.ascii),
    )


def run_tui(args: argparse.Namespace) -> int:
    app = build_app(args)
    if app.glyphs is ASCII:
        # Textual writes to stderr: its borders and scrollbars reach the terminal as ASCII twins too.
        to_ascii(sys.__stderr__)
    app.run()
    return exit_status(app)


def exit_status(app) -> int:
    """0 when the app was quit; CRASH (70) when it stopped on an error, with one line naming it on stderr
    and its traceback in a file."""
    if not app.return_code:
        return 0
    error = app._exception  # Textual keeps the exception that stopped the app here
    report(f"the screen stopped on an error: {crashed(error) if error else f'status {app.return_code}'}")
    return CRASH
