"""`gpumem-tui fleet --prometheus URL` and `fleet --demo`: the fleet screen (app/fleet_app.py).

The live source opens one client per refresh and evaluates at the refresh's moment (or always at `--at`),
through one FleetReader for the app's life (the overview unless --full; the slow facts kept between reads);
the demo is the simulated fleet of demo/fleet_answers.py, computed once off the UI's thread."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

from gpumem_tui.app.fleet_app import FleetApp, HistoryReader, Reader
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.demo.fleet_answers import DEMO_SOURCE, demo_fleet
from gpumem_tui.demo.fleet_history import demo_fleet_history
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.headroom import Headroom
from gpumem_tui.sources.prometheus.history import FleetHistory, read_history
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FleetReader
from gpumem_tui.sources.prometheus.records import FleetSample

Planner = Callable[[FleetSample], FleetSample]
INTERVAL_S = 15.0
"""Seconds between reads unless --interval says."""
HISTORY_S = 3600.0
"""How far back the history line looks unless --history says."""


def _unplanned(sample: FleetSample) -> FleetSample:
    return sample


def headroom() -> Headroom:
    """The headroom fractions of the judge's thresholds (GPUMEM_TUI_HEADROOM_* in the environment)."""
    t = Thresholds()
    return Headroom(t.headroom_warning_fraction, t.headroom_critical_fraction, t.headroom_plan_tolerance_fraction)


def prometheus_reader(
    connection: Connection, queries: Queries, at: float | None, timeout_s: float, plan: Planner = _unplanned
) -> Reader:
    """Each refresh through one FleetReader, which keeps the slow facts (the join) between refreshes."""
    reader = FleetReader(queries, headroom())

    async def read() -> FleetSample:
        async with PrometheusClient(connection, query_timeout_s=timeout_s) as client:
            return plan(await reader.read(client, time.time() if at is None else at))

    return read


def prometheus_history(connection: Connection, queries: Queries, span_s: float, timeout_s: float) -> HistoryReader:
    async def read(at: float) -> FleetHistory:
        async with PrometheusClient(connection, query_timeout_s=timeout_s) as client:
            return await read_history(client, queries, at, span_s)

    return read


def demo_history(span_s: float) -> HistoryReader:
    """The demo's run is fixed: its history is computed once."""
    cached: list[FleetHistory] = []

    async def read(_at: float) -> FleetHistory:
        if not cached:
            cached.append(await asyncio.to_thread(demo_fleet_history, span_s))  # the simulator runs its own loop
        return cached[0]

    return read


def demo_reader(plan: Planner = _unplanned) -> Reader:
    cached: list[FleetSample] = []

    async def read() -> FleetSample:
        if not cached:
            cached.append(await asyncio.to_thread(lambda: plan(demo_fleet())))
        return cached[0]

    return read


def run(
    args: argparse.Namespace,
    inputs: Callable[[argparse.Namespace], tuple[Connection, Queries, float]],
    demo_alone: Callable[[argparse.Namespace], None],
    plan: Planner = _unplanned,
) -> int:
    """`inputs(args)` checks the source options as `fleet check` does: (connection, queries, at);
    `demo_alone(args)` refuses them beside --demo; `plan` gives each sample's engines their plans."""
    interval = INTERVAL_S if args.screen_interval is None else args.screen_interval
    span = HISTORY_S if args.screen_history is None else args.screen_history
    if args.fleet_demo:
        demo_alone(args)
        app = FleetApp(demo_reader(plan), DEMO_SOURCE, interval_s=interval, read_history=demo_history(span))
    elif args.prometheus is not None:
        connection, queries, at = inputs(args)
        fixed = None if args.at is None else at  # without --at, each read is evaluated at its own moment
        reader = prometheus_reader(connection, queries, fixed, args.query_timeout, plan)
        history = prometheus_history(connection, queries, span, args.query_timeout)
        app = FleetApp(reader, connection.url, interval, read_history=history)
    else:
        raise UsageError("fleet: give --prometheus URL or --demo (or an action: snapshot, check)")
    app.run()
    return 0
