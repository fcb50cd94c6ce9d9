"""The overview read (`fleet check`, the fleet screen): per-node figures aggregated on the server, GPUs read
one by one only on the nodes that need a look, judged the same as the full read `fleet snapshot` makes."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.fleet import memory
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, Result
from gpumem_tui.sources.prometheus.held_back import PROBE
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.sources.prometheus.conftest import AT

pytestmark = pytest.mark.prometheus
LOOK = Thresholds().headroom_warning_fraction
CODES = {
    "config_drift",
    "engine_down",
    "engine_starting",
    "headroom_low",
    "kv_pool_short",
    "kv_saturated",
    "source_stale",
    "weights_mismatch",
}
"""Every finding code the test fleet raises at the moments below."""


class Recording(PrometheusClient):
    """The real client, with the PromQL of every query it sent kept in order."""

    sent: list[str]

    async def query(self, promql: str, at: float) -> Result:
        self.sent.append(promql)
        return await super().query(promql, at)


def _read(url: str, queries: Queries, at: float = AT, sent: list[str] | None = None):
    async def read():
        async with Recording(Connection(url)) as client:
            client.sent = [] if sent is None else sent
            return await FleetReader(queries, FleetRules()).read(client, at)

    return asyncio.run(read())


def _said(sample) -> list[tuple]:
    return [(f.node, f.finding.severity, f.finding.code, f.finding.title) for f in judge_fleet(sample)]


def _nodes(sample) -> list:
    """The node records less what only the overview counts on the server (`low`: GPUs under the fraction)."""
    return [n.model_copy(update={"low": None}) for n in sample.nodes]


@pytest.mark.parametrize("at", [AT, AT - 70, AT - 100])
def test_the_overview_judges_as_the_full_read(fleet_url, at):
    full, overview = _read(fleet_url, Queries(), at), _read(fleet_url, Queries(look=LOOK), at)
    assert _said(overview) == _said(full)
    assert _nodes(overview) == _nodes(full) and overview.coverage == full.coverage
    assert [(e.name, e.node, e.joined, e.gpu_count, e.gpus) for e in overview.engines] == [
        (e.name, e.node, e.joined, e.gpu_count, e.gpus) for e in full.engines
    ]


def test_the_moments_compared_cover_every_finding_code_of_the_fleet(fleet_url):
    codes = {f.finding.code for at in (AT, AT - 70, AT - 100) for f in judge_fleet(_read(fleet_url, Queries(), at))}
    assert codes == CODES


def test_as_planned_headroom_is_one_counted_finding_per_node(fleet_url):
    """vLLM's gpu_memory_utilization 0.9 leaves under 10 % of each H100 free on purpose: one info finding per
    node that counts its GPUs (a fleet of 1,000 such nodes says 1,000 things, not 8,000)."""
    planned = [
        (f.node, f.finding.title, f.finding.explanation)
        for f in judge_fleet(_read(fleet_url, Queries()))
        if f.finding.code == "headroom_low" and f.finding.severity == "info"
    ]
    assert [p[:2] for p in planned] == [
        ("node-a", "node node-a: 1 GPU under 10.0 % free, as planned (the least: 8.9 %)"),
        ("node-b", "node node-b: 6 GPUs under 10.0 % free, as planned (the least: 8.7 %)"),
        ("node-d", "node node-d: 1 GPU under 10.0 % free, as planned (the least: 8.7 %)"),
        ("node-g", "node node-g: 1 GPU under 10.0 % free, as planned (the least: 8.9 %)"),
    ]
    assert planned[1][2] == (
        "The least free has 6.92 GiB of 79.65 GiB (8.7 % of the card); its engines' gpu_memory_utilization "
        "(0.9) leaves that much on purpose."
    )


@pytest.mark.parametrize("at", [AT, AT - 70])
def test_the_overview_reads_gpus_one_by_one_only_on_nodes_that_need_a_look(fleet_url, at):
    """A NaN reading (node-nan) or headroom the engines' utilization does not explain (node-c's neighbour at
    AT - 70) needs a look, and so does a node whose GPUs serve two models (node-e: every GPU of it); a node
    whose GPUs are under the fraction as planned (node-b) is counted."""
    full, sent = _read(fleet_url, Queries(), at), []
    overview = _read(fleet_url, Queries(look=LOOK), at, sent)
    looked = {(g.node, g.uuid) for g in overview.gpus}
    needed = {"node-nan", "node-e"} | ({"node-c"} if at == AT - 70 else set())
    assert {node for node, _ in looked} == needed
    assert looked == {
        (g.node, g.uuid)
        for g in full.gpus
        if g.node == "node-e"
        or g.node in needed
        and (g.free_bytes is None or g.total_bytes is None or g.free_bytes < LOOK * g.total_bytes)
    }
    (one_by_one,) = [
        q for q in sent if q.startswith("max by") and "GPU_I_ID, GPU_I_PROFILE, gpu, modelName, __name__" in q
    ]
    assert all(node in one_by_one for node in needed)
    assert not any(node in one_by_one for node in ("node-a", "node-b", "node-d", "node-f", "node-g"))
    node_b = next(n for n in overview.nodes if n.name == "node-b")
    assert node_b.low is not None and node_b.low.gpus == (6 if at == AT else 4)


def test_check_says_what_the_full_check_says(fleet_url, capsys):
    from gpumem_tui.cli import main

    argv = ["fleet", "check", "--prometheus", fleet_url, "--at", str(AT), "--json"]
    overview_code = main(argv)
    overview = json.loads(capsys.readouterr().out)
    full_code = main([*argv, "--full"])
    full = json.loads(capsys.readouterr().out)
    assert overview_code == full_code == 2
    assert overview["findings"] == full["findings"] and overview["coverage"] == full["coverage"]


@pytest.mark.parametrize("at", [AT, AT - 70])
def test_the_screen_shows_the_same_tables_from_both_reads(fleet_url, at):
    """The fleet screen reads the overview: its tables per model and per node are the full read's, the
    models' memory used included (summed per node where the node's GPUs all serve the model)."""
    from gpumem_tui.app.fleet_view import model_table, node_table

    full, overview = _read(fleet_url, Queries(), at), _read(fleet_url, Queries(look=LOOK), at)
    for table in (model_table, node_table):
        said, shown = table(full, judge_fleet(full)), table(overview, judge_fleet(overview))
        assert shown.rows == said.rows and shown.said() == said.said()


def test_the_query_counts_docs_fleet_md_gives_are_what_a_read_sends(fleet_url):
    """docs/fleet.md's queries per read, held to the queries a real read sends. The test fleet has a node that
    runs gpumem-tui export (its queries follow the one that asks) and nodes that need a look (one query of
    their GPUs one by one)."""
    doc = " ".join((Path(__file__).resolve().parents[3] / "docs" / "fleet.md").read_text(encoding="utf-8").split())
    per_refresh = int(re.search(r"Per refresh, (\d+) queries", doc)[1])
    full = int(re.search(r"\*\*The full read\*\* \([^)]*\): (\d+) queries", doc)[1])
    exporters = int(re.search(r"Only when some node runs one do (\d+) more follow", doc)[1])
    asks = 1  # whether any node runs gpumem-tui export: "adds one query to each read"
    assert "adds one query to each read" in doc
    sent: list[str] = []
    _read(fleet_url, Queries(), AT, sent)
    assert sent.count(PROBE) == 1  # a reader's first read asks how far behind the server answers (held_back.py)
    assert len(sent) - 1 == full + asks + exporters
    schema = " ".join((Path(__file__).resolve().parents[3] / "docs" / "fleet-json.md").read_text("utf-8").split())
    said = re.search(r"(\d+) queries, or (\d+) on a fleet with exporters", schema)
    assert (int(said[1]), int(said[2])) == (full + asks, full + asks + exporters)  # docs/fleet-json.md agrees

    async def refreshes():
        reader = FleetReader(Queries(look=LOOK), FleetRules())
        async with Recording(Connection(fleet_url)) as client:
            client.sent = []
            await reader.read(client, AT)  # the first reads the slow facts too
            client.sent = []
            await reader.read(client, AT + 5)
            return client.sent

    steady = asyncio.run(refreshes())
    assert len(steady) == per_refresh + asks + exporters + 1


def test_a_judge_that_worded_a_node_before_says_what_a_first_judge_says(fleet_url):
    """The as-planned words are kept per node (memory.SAID) where the node reads the same: judged after other
    moments and thresholds, every finding is the one a judge with nothing kept makes; the same node read the
    same is told by the very finding made before."""
    moments = [_read(fleet_url, Queries(), at) for at in (AT, AT - 70, AT - 100, AT)]
    other = Thresholds(headroom_warning_fraction=0.2)
    judged = [judge_fleet(sample, t) for sample in moments for t in (None, other)]
    memory.SAID.clear()
    fresh = []
    for sample in moments:
        for t in (None, other):
            memory.SAID.clear()
            fresh.append(judge_fleet(sample, t))
    assert [[f.model_dump() for f in fs] for fs in judged] == [[f.model_dump() for f in fs] for fs in fresh]
    assert any(f.finding.title.endswith("as planned (the least: 8.7 %)") for f in judged[0])
    first, second = ([f for f in judge_fleet(moments[0]) if "as planned" in f.finding.title] for _ in range(2))
    assert first and all(a is b for a, b in zip(first, second, strict=True))
