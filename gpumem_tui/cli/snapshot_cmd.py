"""`gpumem-tui snapshot`: one sample of this node, a simulated node or a recording, as a table or JSON (the
options: snapshot_opts.py; the table: snapshot_view.py)."""

from __future__ import annotations

import argparse
import asyncio

from gpumem_tui.cli.errors import NoSourceError, UsageError, warn
from gpumem_tui.cli.output import console, print_json
from gpumem_tui.cli.snapshot_view import render
from gpumem_tui.demo import ManualClock, load_scenario
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.models import Sample
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.host import HostSource
from gpumem_tui.sources.nvml import NvmlSource, NvmlUnavailable
from gpumem_tui.sources.replay import Recorder, ReplaySource

SCHEMA = "gpumem-tui.snapshot/1"


def run(args: argparse.Namespace) -> int:
    if args.at is not None and args.demo is None and args.replay is None:
        raise UsageError("--at needs --demo or --replay")
    sample, where = _take(args)
    if args.record:
        with Recorder(args.record) as recorder:
            recorder.write(sample)
    if args.json:
        print_json({"schema": SCHEMA, **sample.model_dump(mode="json")})
    else:
        render(sample, console(), where)
    return 0


def _take(args: argparse.Namespace) -> tuple[Sample, str]:
    if args.demo is not None:
        return _demo(args)
    if args.replay:
        return _replay(args)
    return _live(), "live (NVML)"


def _demo(args: argparse.Namespace) -> tuple[Sample, str]:
    """The simulated node at one moment, its engines scraped over HTTP from their local servers."""
    scenario = load_scenario(args.demo)
    at = scenario.story_s if args.at is None else args.at
    if at > scenario.duration_s:
        raise UsageError(f"--at {at:g}: scenario {scenario.name} lasts {scenario.duration_s:g} s")

    async def one() -> Sample:
        feed = DemoFeed(args.demo, ManualClock(at), seed=args.seed)
        try:
            return await feed.sample()
        finally:
            await feed.aclose()

    return asyncio.run(one()), f"simulated node '{scenario.name}' at {at:g} s"


def _replay(args: argparse.Namespace) -> tuple[Sample, str]:
    at = float("inf") if args.at is None else args.at
    replay = ReplaySource(args.replay, clock=lambda: 0.0, start_at=at)
    sample = replay.sample()
    offset = replay.offset(sample)
    if args.at is not None and replay.finished and args.at > offset:
        replay.warnings.append(
            f"--at {args.at:g} is past the end of the recording ({offset:g} s); showing the last sample"
        )
    for warning in replay.warnings:
        warn(warning)
    return sample, f"replay of {args.replay} at {offset:g} s"


def _live() -> Sample:
    nvml = NvmlSource()
    try:
        nvml.open()
    except NvmlUnavailable as exc:
        raise NoSourceError(f"{exc} (see `gpumem-tui snapshot --help`)") from None
    try:
        return Collector(nvml, HostSource(), source="nvml").sample()
    finally:
        nvml.close()
