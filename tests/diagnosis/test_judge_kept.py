"""The fleet's judge keeps what it read of the engines' facts and each node's count from one sample to the next
(kept.py, memory.py): a sample judged after others says exactly what a judge from nothing says of it, and where
only the engines' gauges moved the answers are the very ones of the last sample."""

from __future__ import annotations

import pytest

from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.fleet import kept, memory
from gpumem_tui.diagnosis.fleet.headroom import engine_shares
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetGpu, FleetNode, FleetSample, NodeLow
from gpumem_tui.units import MIB

CARD, TOTAL = "NVIDIA H100 80GB HBM3", round(81559 * MIB)
LOW = NodeLow(gpus=8, least_free_bytes=round(6000 * MIB), least_free_total_bytes=TOTAL)
"""8 GPUs with 7.4 % free: under the 10 % warning, as the engines' 0.92 leaves them."""


def _engine(node: str, **changed) -> FleetEngine:
    facts = dict(
        model_name="m",
        namespace="ns",
        pod=f"pod-{node}",
        node=node,
        gpus=[f"GPU-{node}-{i}" for i in range(8)],
        joined="found",
        gpu_memory_utilization=0.92,
        kv_usage_fraction=0.5,
        settings={"block_size": "16"},
    )
    return FleetEngine(**{**facts, **changed})


def _sample(nodes: list[FleetNode], engines: list[FleetEngine], gpus: list[FleetGpu] = ()) -> FleetSample:
    return FleetSample(source="s", evaluated_at=0.0, nodes=nodes, engines=engines, gpus=list(gpus))


NODES = [FleetNode(name=f"n{i}", gpus=8, cards={CARD: 8}, low=LOW) for i in range(4)]
ENGINES = [_engine(f"n{i}") for i in range(4)]
READ = [  # a node whose GPUs were read one by one: one under the fraction as planned, one critical
    FleetGpu(node="n4", uuid="GPU-n4-0", card=CARD, free_bytes=round(6000 * MIB), total_bytes=TOTAL),
    FleetGpu(node="n4", uuid="GPU-n4-1", card=CARD, free_bytes=round(500 * MIB), total_bytes=TOTAL),
]
BASE = _sample([*NODES, FleetNode(name="n4", gpus=2, cards={CARD: 2})], [*ENGINES, _engine("n4")], READ)


def _with(sample: FleetSample, **changed) -> FleetSample:
    return sample.model_copy(update=changed)


def _engines(**by_node) -> list[FleetEngine]:
    """BASE's engines, those of the nodes named changed as said (None: that node's engine gone)."""
    out = []
    for e in BASE.engines:
        change = by_node.get(e.node, {})
        if change is not None:
            out.append(e.model_copy(update=change) if change else e)
    return out


CHANGES = [
    (
        _with(
            BASE,
            nodes=[*NODES[:3], NODES[3].model_copy(update={"low": LOW.model_copy(update={"gpus": 0})}), BASE.nodes[4]],
        ),
        None,
    ),  # none counted
    (_with(BASE, engines=_engines(n0={"kv_usage_fraction": 0.99, "requests_waiting": 4.0})), None),  # gauges
    (_with(BASE, engines=_engines(n1={"gpu_memory_utilization": 0.80})), None),  # n1 not as planned
    (
        _with(
            BASE,
            nodes=[
                NODES[0],
                NODES[1],
                NODES[2].model_copy(update={"low": LOW.model_copy(update={"least_free_bytes": round(5000 * MIB)})}),
                *BASE.nodes[3:],
            ],
        ),
        None,
    ),  # n2's least free
    (BASE, Thresholds(headroom_warning_fraction=0.05)),  # 7.4 % free is no longer under the warning
    (_with(BASE, engines=_engines(n3={"settings": {"block_size": "32"}})), None),  # drift
    (_with(BASE, engines=_engines(n3={"settings": {"block_size": "32"}, "pod": "other"})), None),  # named anew
    (_with(BASE, engines=_engines(n0=None)), None),  # n0's engine gone: its GPUs are no longer explained
    (_with(BASE, nodes=[NODES[0].model_copy(update={"gpus": 16}), *BASE.nodes[1:]]), None),  # 8 of n0 unexplained
    (_with(BASE, stale_nodes={"n1": 900.0}), None),
    (BASE, None),
]
SAMPLES = [(BASE, None), *(each for change in CHANGES for each in (change, (BASE, None)))]
"""Each change after BASE and BASE after it: a kept answer is asked both ways."""


UNREAD = [(_with(sample, gpus=[]), t) for sample, t in SAMPLES]
"""The same, no GPU read one by one: every node told by its count (the nodes' words kept whole where they and
their shares are the same objects)."""


def _said(sample: FleetSample, t: Thresholds | None) -> list[dict]:
    return [f.model_dump() for f in judge_fleet(sample, t)]


def _fresh(sample: FleetSample, t: Thresholds | None) -> list[dict]:
    kept.forget()
    memory.forget()
    return _said(sample, t)


@pytest.mark.parametrize("samples", [SAMPLES, UNREAD], ids=["a node read GPU by GPU", "every node by its count"])
def test_a_judge_that_kept_the_last_samples_says_what_a_judge_from_nothing_says(samples):
    fresh = [_fresh(s, t) for s, t in samples]
    assert len({str(f) for f in fresh}) >= 7  # the changes change the answers: the test can fail
    kept.forget()
    memory.forget()
    for (sample, t), expected in zip(samples * 2, fresh * 2, strict=True):
        assert _said(sample, t) == expected


def test_where_only_the_gauges_moved_the_answers_are_the_last_ones():
    first = judge_fleet(BASE)
    moved = _with(BASE, engines=_engines(n0={"kv_usage_fraction": 0.6}, n1={"requests_running": 3.0}))
    assert engine_shares(moved.engines) is engine_shares(BASE.engines)
    again = judge_fleet(moved)
    as_planned = [f for f in first if f.finding.code == "headroom_low" and f.finding.severity == "info"]
    assert len(as_planned) == 5  # n0..n3 by their count, n4 by its GPU read one by one
    assert all(any(f is g for g in again) for f in as_planned if f.node != "n4")
