"""`gpumem-tui fleet --prometheus URL` and `fleet --demo`: the fleet screen (app/screens/fleet.py).

The live source opens one client per refresh and evaluates at the refresh's moment (or always at `--at`),
through one FleetReader for the app's life (the overview unless --full; the slow facts kept between reads);
the demo is the simulated fleet of demo/fleet_answers.py, computed once off the UI's thread. `enter` on a node
opens the TUI's own single-node screen on that node's series (sources/prometheus/node_feed.py; the demo's
answers for a demo node), and q or escape there comes back to the fleet."""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from dataclasses import replace

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.node import Node
from gpumem_tui.app.off_thread import off_thread
from gpumem_tui.app.screens.fleet import Fleet, HistoryReader, Reader
from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli.errors import UsageError, exit_status
from gpumem_tui.cli.fleet_opts import INTERVAL_S
from gpumem_tui.demo.fleet_answers import DEMO_SOURCE, demo_fleet, demo_node_feed
from gpumem_tui.demo.fleet_history import demo_fleet_history
from gpumem_tui.diagnosis.findings.records import Thresholds
from gpumem_tui.diagnosis.fleet.node import with_fleet
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.history import FleetHistory, read_history
from gpumem_tui.sources.prometheus.node_feed import NodeFeed, prometheus_node_feed
from gpumem_tui.sources.prometheus.node_history import SPAN_S
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FleetReader
from gpumem_tui.sources.prometheus.records import FleetSample

Planner = Callable[[FleetSample], FleetSample]
HISTORY_S = SPAN_S
"""How far back the history line looks unless --history says; a node opened from here reads as far back for
its forensics (`f`)."""
NODE_INTERVAL_S = 5.0
"""A demo node's screen refresh: its answers are computed once, so this only redraws its age."""


def _unplanned(sample: FleetSample) -> FleetSample:
    return sample


DEFAULT = Thresholds()
"""The fleet screen's thresholds: its judge's, and the fraction its refreshes read engines one by one from."""


def prometheus_reader(
    connection: Connection,
    queries: Queries,
    at: float | None,
    timeout_s: float,
    plan: Planner = _unplanned,
    thresholds: Thresholds = DEFAULT,
) -> Reader:
    """Each refresh through one FleetReader, which keeps the slow facts (the join) between refreshes; its first
    read a first look, the costly slow facts read next (the screen reads again at once), planned only then.
    Between its reads of the pools, the engines' gauges by exception: one by one at or over the `thresholds`'
    saturation fraction, where the screen's judge may find one saturated (model_gauges.py)."""
    over = replace(queries, over=thresholds.kv_saturated_fraction)
    reader = FleetReader(over, FleetRules(), first_look=True)

    async def read() -> FleetSample:
        async with PrometheusClient(connection, query_timeout_s=timeout_s) as client:
            sample = await reader.read(client, time.time() if at is None else at)
        return sample if sample.reading else plan(sample)  # a first look's engines have no GPUs to plan yet

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
            # a daemon thread, so q need not wait for it (app/off_thread.py)
            cached.append(await off_thread(lambda: demo_fleet_history(span_s), "demo history"))
        return cached[0]

    return read


def demo_reader(fleet: Callable[[], FleetSample] = demo_fleet, plan: Planner = _unplanned) -> Reader:
    cached: list[FleetSample] = []

    async def read() -> FleetSample:
        if not cached:
            cached.append(await off_thread(lambda: plan(fleet()), "demo fleet"))
        return cached[0]

    return read


def node_opener(feed: Callable[[str], NodeFeed], interval_s: float) -> Callable[[str], Node]:
    """A node's feed as the TUI's own screen judges it (the catalog, no plan set by hand), with the fleet's own
    findings about the node, as `check --prometheus --node` judges it."""

    def open_node(name: str) -> Node:
        source = feed(name)
        judge = Judge(load_catalog())
        return Node(source, judge, interval_s=interval_s, also=with_fleet(source, judge.thresholds))

    return open_node


def run(
    args: argparse.Namespace,
    inputs: Callable[[argparse.Namespace], tuple[Connection, Queries, float]],
    demo_alone: Callable[[argparse.Namespace], None],
    plan: Planner = _unplanned,
    run_app=lambda app: app.run(),
) -> int:
    """`inputs(args)` checks the source options as `fleet check` does: (connection, queries, at);
    `demo_alone(args)` refuses them beside --demo; `plan` gives each sample's engines their plans; `run_app`
    runs the app (a test runs it headless). 0 when quit; a screen that stops on an error: its exit status."""
    interval = INTERVAL_S if args.screen_interval is None else args.screen_interval
    span = HISTORY_S if args.screen_history is None else args.screen_history
    if args.fleet_demo:
        demo_alone(args)
        once = functools.cache(demo_fleet)
        reader, source = demo_reader(once, plan), DEMO_SOURCE
        history = demo_history(span)
        node = node_opener(lambda name: demo_node_feed(name, once), NODE_INTERVAL_S)
    elif args.prometheus is not None:
        connection, queries, at = inputs(args)
        fixed = None if args.at is None else at  # without --at, each read is evaluated at its own moment
        reader = prometheus_reader(connection, queries, fixed, args.query_timeout, plan, DEFAULT)
        source = connection.url
        history = prometheus_history(connection, queries, span, args.query_timeout)
        node = node_opener(
            lambda name: prometheus_node_feed(
                connection, name, queries.matchers, fixed, args.query_timeout, span, queries.labels, stale=stale
            ),
            interval,
        )
    else:
        raise UsageError("fleet: give --prometheus URL or --demo (or an action: snapshot, check)")
    fleet = Fleet(reader, source, interval, read_history=history, open_node=node, thresholds=DEFAULT)
    app = GpuMemApp.of_fleet(fleet)
    run_app(app)
    return exit_status(app)
