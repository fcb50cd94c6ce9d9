"""One node's history read from a real Prometheus with range queries (sources/prometheus/node_history.py): each
step is the Sample an instant read of that moment makes, the forensics over it finds the node's story when
`check` first says it, gaps and NaN readings are said, and the cost is one range query per series family."""

from __future__ import annotations

import asyncio

import pytest

from gpumem_tui.catalog import load_catalog
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.diagnosis.forensics import investigate
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.node_feed import prometheus_node_feed, read_node
from gpumem_tui.sources.prometheus.node_history import NO_GROWTH, read_node_history
from gpumem_tui.sources.prometheus.node_queries import NodeQueries
from gpumem_tui.sources.prometheus.node_sample import node_sample
from tests.sources.prometheus.conftest import AT, STEP_S

pytestmark = pytest.mark.prometheus
T0 = AT - 120
"""The fixture's first sample: a 2 min history at AT covers the fleet from its start."""


class Counting(PrometheusClient):
    """The real client, counting what it is asked."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.instant, self.ranged = 0, 0

    async def query(self, promql, at):
        self.instant += 1
        return await super().query(promql, at)

    async def query_range(self, promql, start, end, step_s):
        self.ranged += 1
        return await super().query_range(promql, start, end, step_s)


def _history(url: str, node: str, span_s: float = 120.0, end: float = AT):
    async def read():
        async with Counting(Connection(url)) as client:
            return await read_node_history(client, NodeQueries(node), end, span_s, stale), client

    return asyncio.run(read())


def _instant(url: str, node: str, at: float):
    async def read():
        async with PrometheusClient(Connection(url)) as client:
            return node_sample(await read_node(client, NodeQueries(node), at, stale), node)

    return asyncio.run(read())


@pytest.mark.parametrize("node", ["node-c", "node-e", "node-h", "node-nan", "node-g"])
def test_each_step_is_the_sample_an_instant_read_of_that_moment_makes(fleet_url, node):
    history, _ = _history(fleet_url, node)
    assert history.samples and len(history.moments) == len(history.samples)
    for moment, sample in zip(history.moments, history.samples, strict=True):
        assert sample == _instant(fleet_url, node, moment), (node, moment - T0)


def test_one_range_query_per_series_family_never_one_per_step(fleet_url):
    history, client = _history(fleet_url, "node-e")
    first, engines = NodeQueries("node-e").first_round(), NodeQueries("node-e").engine_queries([])
    assert (client.instant, client.ranged) == (0, len(first) + len(engines))
    assert history.step_s == 1.0 and len(history.samples) > 2  # 121 steps, one query each family


def test_a_step_finer_than_the_scrape_adds_each_sample_once(fleet_url):
    history, _ = _history(fleet_url, "node-c")
    stamps = [s.timestamp for s in history.samples]
    assert stamps == [T0 + k * STEP_S for k in range(len(stamps))] and stamps[-1] == AT


def _first(url: str, node: str, moments: list[float], code: str | None = None) -> float | None:
    """The first moment an instant read of the node, judged alone as `check` judges it, is critical (with
    `code`, when given)."""
    catalog = load_catalog()
    for moment in moments:
        judged = investigate([_instant(url, node, moment)], catalog)
        assert judged is not None
        if judged.first_critical is not None and code in (None, *(m.code for m in judged.markers)):
            return moment
    return None


def test_the_forensics_finds_node_c_s_story_when_check_first_says_it(fleet_url):
    """node-c: its neighbour fills GPU 0 (0.7 % free at 50 s), then its engine stops (down from 60 s)."""
    history, _ = _history(fleet_url, "node-c")
    found = investigate(history, load_catalog())
    assert found is not None and found.start_timestamp == T0
    full, down = (
        _first(fleet_url, "node-c", history.moments),
        _first(fleet_url, "node-c", history.moments, "engine_down"),
    )
    assert (full, down) == (T0 + 50, T0 + 60)
    assert found.first_critical is not None and found.first_critical.code == "headroom_low"
    assert found.first_critical_offset_s == full - T0
    assert [(m.offset_s, m.code) for m in found.markers] == [(50, "headroom_low"), (60, "engine_down")]
    (gpu,) = found.timelines
    before = max(b for t, b in gpu.points if t < 60)
    assert before > 78 * 2**30 and gpu.points[-1][1] < 21 * 2**30  # 78.6 GiB used, then the engine's gone


def test_a_node_that_stopped_reporting_is_a_gap_never_zeros(fleet_url):
    history, _ = _history(fleet_url, "node-e")
    assert [s.timestamp - T0 for s in history.samples] == [0, 5, 10, 15, 20, 25, 30]
    assert history.warnings == [
        "node node-e: no new dcgm-exporter sample from 2026-01-01 00:00:30 to 00:02:00 UTC (90 s, where the "
        "read found a new one every 5 s): no points there, not zeros",
        f"node node-e: {NO_GROWTH}",
    ]


def test_a_node_that_runs_gpumem_tui_export_has_its_processes_series(fleet_url):
    assert _history(fleet_url, "node-h")[0].warnings == []


def test_a_nan_reading_is_said_and_never_a_point(fleet_url):
    history, _ = _history(fleet_url, "node-nan")
    assert {g.memory_used_bytes for s in history.samples for g in s.gpus} == {None}
    count = len(history.samples)
    assert history.warnings == [
        f"node node-nan: GPU 0 memory used unknown in {count} of {count} samples (a NaN reading, or no series): "
        "no points there, not zeros",
        f"node node-nan: {NO_GROWTH}",
    ]
    found = investigate(history, load_catalog())
    assert found is not None and all(not t.points for t in found.timelines)


def test_the_feed_s_history_names_the_node_the_span_and_the_step(fleet_url):
    past = prometheus_node_feed(Connection(fleet_url), "node-c", at=AT, history_s=120, stale=stale).past()
    assert past is not None
    assert past.what == f"node node-c from Prometheus {fleet_url}, the 2 min before 2026-01-01 00:02:00 UTC (step 1 s)"
    assert [s.timestamp for s in past.read()] == [s.timestamp for s in _history(fleet_url, "node-c")[0]]
    now = prometheus_node_feed(Connection(fleet_url), "node-c", stale=stale).past()
    assert now is not None and now.what == f"node node-c from Prometheus {fleet_url}, the last 1 h (step 30 s)"
