"""`gpumem-tui fleet --prometheus URL` and `fleet --demo`: the fleet screen (app/fleet_app.py).

The live source opens one client per refresh and evaluates at the refresh's moment (or always at `--at`),
through one FleetReader for the app's life (the overview unless --full; the slow facts kept between reads);
the demo is the simulated fleet of demo/fleet_answers.py, computed once off the UI's thread."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

from gpumem_tui.app.fleet_app import FleetApp, Reader
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.demo.fleet_answers import DEMO_SOURCE, demo_fleet
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.headroom import Headroom
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FleetReader
from gpumem_tui.sources.prometheus.records import FleetSample


def headroom() -> Headroom:
    """The headroom fractions of the judge's thresholds (GPUMEM_TUI_HEADROOM_* in the environment)."""
    t = Thresholds()
    return Headroom(t.headroom_warning_fraction, t.headroom_critical_fraction, t.headroom_plan_tolerance_fraction)


def prometheus_reader(connection: Connection, queries: Queries, at: float | None, timeout_s: float) -> Reader:
    """Each refresh through one FleetReader, which keeps the slow facts (the join) between refreshes."""
    reader = FleetReader(queries, headroom())

    async def read() -> FleetSample:
        async with PrometheusClient(connection, query_timeout_s=timeout_s) as client:
            return await reader.read(client, time.time() if at is None else at)

    return read


def demo_reader() -> Reader:
    cached: list[FleetSample] = []

    async def read() -> FleetSample:
        if not cached:
            cached.append(await asyncio.to_thread(demo_fleet))
        return cached[0]

    return read


def run(
    args: argparse.Namespace,
    inputs: Callable[[argparse.Namespace], tuple[Connection, Queries, float]],
    demo_alone: Callable[[argparse.Namespace], None],
) -> int:
    """`inputs(args)` checks the source options as `fleet check` does: (connection, queries, at);
    `demo_alone(args)` refuses them beside --demo."""
    if args.fleet_demo:
        demo_alone(args)
        app = FleetApp(demo_reader(), DEMO_SOURCE, interval_s=args.interval)
    elif args.prometheus is not None:
        connection, queries, at = inputs(args)
        fixed = None if args.at is None else at  # without --at, each read is evaluated at its own moment
        app = FleetApp(prometheus_reader(connection, queries, fixed, args.query_timeout), connection.url, args.interval)
    else:
        raise UsageError("fleet: give --prometheus URL or --demo (or an action: snapshot, check)")
    app.run()
    return 0
