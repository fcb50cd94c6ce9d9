"""The answers Prometheus would give the fleet's queries, computed in-process from the simulated fleet's samples
(each query's form in sources/prometheus/query_table.py, evaluated by demo/promql.py), so `fleet --demo` needs
no Prometheus and goes through the same join and judge (`sources/prometheus/fleet.build`,
`diagnosis/fleet.judge_fleet`) as a real server's answers."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from gpumem_tui.demo.fleet_series import FleetNodeSpec, series_rows
from gpumem_tui.demo.promql import Row, Stored, answer
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus import gpumem_export
from gpumem_tui.sources.prometheus.client import Result
from gpumem_tui.sources.prometheus.fleet import FULL, build
from gpumem_tui.sources.prometheus.gpumem_export import GATE
from gpumem_tui.sources.prometheus.node_sample import NodeRead, only
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.query_table import TABLE
from gpumem_tui.sources.prometheus.records import FleetSample

if TYPE_CHECKING:  # a node's screen only: `fleet check` loads no feed
    from gpumem_tui.sources.prometheus.node_feed import NodeFeed

DEMO_FLEET = (
    # as reference/fleet.md 1.2's setups: Kubernetes with exported_pod (honorLabels false), with plain pod
    # (honorLabels true, dcgm-exporter after 4.8.2), bare metal without FB_RESERVED, one node that also runs
    # `gpumem-tui export` and one that runs only it, one whose exporter stopped, one model served two ways
    FleetNodeSpec("node-a", "healthy-8b", "exported_pod", "Hostname", settings={"enable_prefix_caching": "False"}),
    FleetNodeSpec("node-b", "busy-node", "pod", "hostname"),
    FleetNodeSpec("node-c", "noisy-neighbour", "bare", "Hostname", reserved=False),
    FleetNodeSpec("node-d", "kv-pressure", "exported_pod", "Hostname"),
    FleetNodeSpec("node-e", "k8s-two-pods", "exported_pod", "Hostname", until_s=30),
    FleetNodeSpec("node-f", "idle-node", "pod", "hostname"),
    FleetNodeSpec("node-g", "healthy-8b", "exported_pod", "Hostname", virtual_gpus=True),
    FleetNodeSpec("node-h", "wrong-precision", "exported_pod", "Hostname", exporter=True),
    # a node that runs only `gpumem-tui export`: its memory, engine, plan and other processes are the exporter's
    FleetNodeSpec("node-i", "tp4-70b", "exported_pod", "Hostname", exporter=True, dcgm=False, vllm=False),
    # a node that serves with SGLang: its own series (token usage, requests, pool size) join the fleet
    FleetNodeSpec("node-j", "sglang-node", "exported_pod", "Hostname"),
)
DEMO_AT_S, DEMO_STEP_S = 120.0, 5.0
"""The moment of the demo (two minutes in: preemption rates have their window) and dcgm-exporter's step."""
DEMO_SOURCE = f"demo: {len(DEMO_FLEET)} simulated nodes at {DEMO_AT_S:.0f} s"


def demo_sample(specs: Iterable[FleetNodeSpec], at_s: float, step_s: float, source: str) -> FleetSample:
    """The FleetSample of the simulated fleet at offset `at_s` (its nodes sampled every `step_s`)."""
    return sample_of(list(series_rows(specs, at_s, step_s)), source)


def sample_of(rows: Sequence[Row], source: str) -> FleetSample:
    """The FleetSample of a simulated fleet's samples, at the newest one's moment."""
    now = max(at for *_, at in rows)
    return build(source, now, answers(rows, now), {}, stale=stale)


@functools.cache
def demo_rows() -> tuple[Row, ...]:
    """The run of `fleet --demo`, simulated once a process: its moment and its history are read from it."""
    return tuple(series_rows(DEMO_FLEET, DEMO_AT_S, DEMO_STEP_S))


def demo_fleet() -> FleetSample:
    """The simulated fleet of `fleet --demo` and `fleet check --demo`."""
    return sample_of(demo_rows(), DEMO_SOURCE)


def node_read(sample: FleetSample, node: str) -> NodeRead:
    """One node of a simulated fleet's sample, as `read_node` reads it from a Prometheus (the simulator
    publishes no per-process series: `gpumem-tui export`'s processes are none)."""
    return NodeRead(only(sample, node))


def demo_node_feed(node: str, sample: Callable[[], FleetSample] = demo_fleet) -> NodeFeed:
    """The single-node screen's feed of one node of `fleet --demo` (`sample`: the fleet, computed once)."""
    import asyncio

    from gpumem_tui.sources.prometheus.node_feed import NodeFeed

    cached: list[FleetSample] = []

    async def read() -> NodeRead:
        if not cached:
            cached.append(await asyncio.to_thread(sample))
            feed.at = cached[0].evaluated_at  # the simulated fleet's own moment: its data ages against it
        return node_read(cached[0], node)

    feed = NodeFeed(read, node, f"{DEMO_SOURCE}, node {node}")
    return feed


def answers(rows: Iterable[Row], now: float) -> dict[str, Result]:
    """The answer at `now` to each query the full read asks (fleet.FULL, and `gpumem-tui export`'s as
    gpumem_export.read asks them), computed from its form in the query table."""
    stored = Stored(row for row in rows if row[3] <= now)
    asked = (*FULL, GATE, *gpumem_export.rest(Queries()))
    return {name: answer(TABLE[name].demo(), stored, now) for name in asked}
