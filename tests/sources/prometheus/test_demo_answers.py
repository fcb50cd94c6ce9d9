"""`fleet --demo` computes Prometheus's answers in-process (demo/fleet_answers.py): over the same simulated
fleet, every query's demo answer (its form in the query table) must be the answer a real Prometheus gives,
and so must the FleetSample, or the demo would show a fleet the real source never would."""

from __future__ import annotations

import asyncio
import re
from dataclasses import fields
from functools import cache

import pytest

from gpumem_tui.demo.fleet_answers import demo_node_feed, demo_sample
from gpumem_tui.demo.promql import Stored, answer
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.answer_forms import Form, Top
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, Result
from gpumem_tui.sources.prometheus.node_feed import prometheus_node_feed
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.query_table import TABLE
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.sources.prometheus.conftest import AT, END_S, FLEET, STEP_S, fleet_text

pytestmark = pytest.mark.prometheus


def _real(url: str):
    async def read():
        async with PrometheusClient(Connection(url)) as client:
            return await FleetReader(Queries(), FleetRules()).read(client, AT)

    return asyncio.run(read())


def _without_nan_node(sample):
    """The backfilled fleet has one hand-written node (NaN readings) the simulator does not make."""
    return sample.model_copy(
        update={
            "source": "-",
            "nodes": [n for n in sample.nodes if n.name != "node-nan"],
            "gpus": [g for g in sample.gpus if g.node != "node-nan"],
            "engines": [e for e in sample.engines if e.instance != "node-nan:8000"],
            "coverage": None,
        }
    )


def test_demo_answers_match_a_real_prometheus(fleet_url):
    real = _without_nan_node(_real(fleet_url))
    demo = _without_nan_node(demo_sample(FLEET, AT - 1767225600, STEP_S, "-"))
    assert END_S >= AT - 1767225600
    assert demo.nodes == real.nodes
    assert demo.gpus == real.gpus
    assert demo.stale_nodes == real.stale_nodes
    assert demo.node_findings == real.node_findings
    assert demo.targets_down == real.targets_down
    # rate() extrapolates to the window's edges; the in-process one does not: within 10 %
    for d, r in zip(demo.engines, real.engines, strict=True):
        assert d.model_copy(update={"preemptions_per_min": None}) == r.model_copy(update={"preemptions_per_min": None})
        assert (d.preemptions_per_min is None) == (r.preemptions_per_min is None), d.name
        if r.preemptions_per_min:
            assert d.preemptions_per_min == pytest.approx(r.preemptions_per_min, rel=0.1), d.name
    demo_codes = sorted((f.node or "", f.finding.code) for f in judge_fleet(demo) if f.node != "node-nan")
    real_codes = sorted((f.node or "", f.finding.code) for f in judge_fleet(real) if f.node != "node-nan")
    assert demo_codes == real_codes


def _without_rates(sample):
    """Preemption rates: the in-process rate() does not extrapolate to the window's edges (above: within 10 %)."""
    engines = [
        e.model_copy(update={"records": [r.model_copy(update={"preemptions_per_min": None}) for r in e.records]})
        for e in sample.engines
    ]
    return sample.model_copy(update={"engines": engines})


def test_a_demo_node_is_the_node_a_real_prometheus_gives(fleet_url):
    """`enter` on a node of `fleet --demo` reads it from the demo's answers (demo/fleet_answers.py): each
    node's Sample equals the one the node's own queries give on a real Prometheus over the same series."""
    demo = demo_sample(FLEET, AT - 1767225600, STEP_S, "-")
    for spec in FLEET:
        real = asyncio.run(prometheus_node_feed(Connection(fleet_url), spec.name, at=AT, stale=stale).sample())
        simulated = asyncio.run(demo_node_feed(spec.name, lambda: demo).sample())
        assert _without_rates(simulated) == _without_rates(real), spec.name
        rates = [
            (r.preemptions_per_min, s.preemptions_per_min)
            for e, f in zip(real.engines, simulated.engines, strict=True)
            for r, s in zip(e.records, f.records, strict=True)
        ]
        for r, s in rates:
            assert (r is None) == (s is None) and (not r or s == pytest.approx(r, rel=0.1)), spec.name


ARGS: dict[str, tuple] = {
    "node_low": ({"NVIDIA H100 80GB HBM3": 8000.0, "NVIDIA A100-SXM4-80GB": 8000.0},),
    "pools_changed": (100.0,),
    "engines_over": (0.9,),
    "engine_running": (0.9,),
    "gpu_detail": ({"Hostname": ["node-a", "node-h"], "hostname": ["node-b"], "instance": ["node-c"]},),
}
"""What the queries that take an argument are asked with here."""
_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+) (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@cache
def _stored() -> Stored:
    """The backfilled fleet's samples, read back from the OpenMetrics text the server was filled with."""
    rows = []
    for line in fleet_text().splitlines():
        if (found := _LINE.match(line)) is not None:
            name, labels, value, at = found.groups()
            rows.append((name, dict(_LABEL.findall(labels)), float(value), float(at)))
    return Stored(rows)


def _series(result: Result, form: Form) -> dict[tuple, float]:
    """Each series by its labels (a `topk` by its group's: which of equal values it keeps is the server's)."""
    if isinstance(form, Top):
        return {tuple(s.labels.get(label, "") for label in form.keep): s.value for s in result.series}
    return {tuple(sorted(s.labels.items())): s.value for s in result.series}


def test_every_query_builder_is_in_the_table():
    """A query the reads ask is a record of the table, so it has a demo answer (its form) and is checked below."""
    helpers = {"sel", "names", "metric", "recording_rules", *(f.name for f in fields(Queries))}
    builders = {name for name in dir(Queries) if not name.startswith("_")} - helpers
    assert builders == set(TABLE)
    assert all(isinstance(q.demo(*ARGS.get(q.name, ())), Form) for q in TABLE.values())


@pytest.mark.parametrize("name", list(TABLE))
def test_each_demo_answer_is_the_real_prometheus_answer(fleet_url, name):
    query = TABLE[name]
    args = ARGS.get(name, ())

    async def read() -> Result:
        async with PrometheusClient(Connection(fleet_url)) as client:
            return await client.query(query.promql(Queries(), *args), AT)

    real, demo = asyncio.run(read()), answer(query.demo(*args), _stored(), AT)
    expected, got = _series(real, query.demo(*args)), _series(demo, query.demo(*args))
    assert got.keys() == expected.keys()
    for labels, value in expected.items():
        assert got[labels] == pytest.approx(value, rel=1e-9, nan_ok=True), labels


def test_targets_down_in_the_jobs_the_facts_read_are_those_of_the_hour(fleet_url):
    """A refresh asks for the targets down in the jobs `pool_jobs` read with the facts, not an hour back over
    every pool: the same targets (node-c's engine exited), and the demo's form answers it as the server does."""

    async def read(promql: str) -> Result:
        async with PrometheusClient(Connection(fleet_url)) as client:
            return await client.query(promql, AT)

    queries, down = Queries(), TABLE["targets_down"]
    jobs = sorted(s.labels["job"] for s in asyncio.run(read(queries.pool_jobs)).series)
    assert jobs
    assert "last_over_time" not in down.promql(queries, jobs) and "last_over_time" in down.promql(queries)
    narrowed, hour = asyncio.run(read(down.promql(queries, jobs))), asyncio.run(read(down.promql(queries)))
    assert narrowed.series and _series(narrowed, down.demo(jobs)) == _series(hour, down.demo())
    assert _series(answer(down.demo(jobs), _stored(), AT), down.demo(jobs)) == _series(narrowed, down.demo(jobs))
