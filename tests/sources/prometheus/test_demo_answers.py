"""`fleet --demo` computes Prometheus's answers in-process (demo/fleet_answers.py): over the same simulated
fleet, they must give the FleetSample a real Prometheus gives, or the demo would show a fleet the real
source never would."""

from __future__ import annotations

import asyncio

import pytest

from gpumem_tui.demo.fleet_answers import demo_node_feed, demo_sample
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.node_feed import prometheus_node_feed
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.sources.prometheus.conftest import AT, END_S, FLEET, STEP_S

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
