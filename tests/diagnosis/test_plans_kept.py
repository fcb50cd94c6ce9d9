"""The fleet screen plans and judges sample after sample (10^4 engines every 15 s), keeping what it made of the
very engine records the reader kept: the planned records (plans.PlansKept) and each engine's plan findings
(plan_findings.SAID). What it says must be what planning and judging each sample from nothing says, over samples
that change one thing at a time and come back, the records of the unchanged engines shared between them as the
reader shares them."""

from __future__ import annotations

from functools import cache

from gpumem_tui.catalog import load_catalog
from gpumem_tui.demo.fleet_answers import demo_fleet
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.fleet import kept, memory
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.plans import PlansKept, plan_fleet
from gpumem_tui.sources.prometheus.records import FleetSample


@cache
def _base() -> FleetSample:
    return demo_fleet()


def _with(sample: FleetSample, **update: object) -> FleetSample:
    return sample.model_copy(update=update)


def _engine(sample: FleetSample, at: int, **update: object) -> FleetSample:
    """`sample` with its engine `at` a new record, changed; the others the very records."""
    engines = list(sample.engines)
    engines[at] = engines[at].model_copy(update=update)
    return _with(sample, engines=engines)


LOOSE = Thresholds(kv_pool_tolerance_fraction=0.5)
"""A pool 15 % short of its plan is within this tolerance, not the default's (10 %)."""


@cache
def _short() -> FleetSample:
    """The base with its first planned engine's pool 15 % short of its plan."""
    base = _base()
    at = next(i for i, e in enumerate(base.engines) if e.plan_from is None and e.pod is not None)
    planned = plan_fleet(base, load_catalog()).engines[at].plan
    assert planned is not None and planned.kv_cache_tokens > 0
    return _engine(base, at, pool_tokens=int(planned.kv_cache_tokens * 0.85), num_gpu_blocks=None)


def _cards(sample: FleetSample, name: str, card: str) -> list:
    """The sample's nodes, node `name`'s GPUs named as `card`."""
    return [n.model_copy(update={"cards": {card: n.gpus}}) if n.name == name else n for n in sample.nodes]


def _renamed(sample: FleetSample, uuids: list[str], card: str) -> list:
    """The sample's GPUs read one by one, those of `uuids` read as `card` (new records, as each read makes)."""
    return [g.model_copy(update={"card": card}) if g.uuid in uuids else g.model_copy() for g in sample.gpus]


def _samples() -> list[tuple[FleetSample, Thresholds]]:
    base, t = _base(), Thresholds()
    planned = [i for i, e in enumerate(base.engines) if e.plan_from is None and e.pod is not None]
    node = next(i for i, n in enumerate(base.nodes) if n.used_bytes)
    nodes = list(base.nodes)
    nodes[node] = nodes[node].model_copy(update={"used_bytes": nodes[node].used_bytes // 2})
    first = base.engines[planned[0]]
    pair = next(i for i in planned if (base.engines[i].gpu_count or 0) % 2 == 0)  # its pod's 2 GPUs split by two
    changes = [
        (_with(base, nodes=nodes), t),  # a node's memory moved: what its engines' weights leave
        (_engine(base, planned[0], pool_tokens=(first.pool_tokens or 1000) // 4, num_gpu_blocks=None), t),
        (_engine(base, planned[1], gpu_memory_utilization=0.5), t),
        (_with(base, gpus=[]), t),  # no GPU read one by one: the card from the node
        (_with(base, gpus=_renamed(base, first.gpus, "NVIDIA H200")), t),  # its GPUs read as another card
        (_with(base, gpus=[], nodes=_cards(base, "node-e", "NVIDIA H200")), t),  # and the node says another card
        (_with(base, targets_down=[{"job": first.job or "", "instance": first.instance or ""}]), t),
        (_with(base, engines=[*base.engines, base.engines[pair].model_copy(update={"engine": "1"})]), t),  # shared
        (_short(), t),
        (_short(), LOOSE),  # the same records, judged by other thresholds
        (_short(), t),
    ]
    return [(base, t), *(each for change in changes for each in (change, (base, t)))]


def _said(sample: FleetSample, t: Thresholds, plans: PlansKept | None) -> tuple[list[dict], list[dict]]:
    planned = plan_fleet(sample, load_catalog(), None, plans)
    return [e.model_dump() for e in planned.engines], [f.model_dump() for f in judge_fleet(planned, t)]


def _fresh(sample: FleetSample, t: Thresholds) -> tuple[list[dict], list[dict]]:
    kept.forget()
    memory.forget()
    return _said(sample, t, None)


def test_planning_and_judging_with_what_was_kept_says_what_from_nothing_says():
    samples = _samples()
    fresh = [_fresh(s, t) for s, t in samples]
    assert len({str(f) for f in fresh}) >= 6  # the changes change the plans or the findings: the test can fail
    assert any(f["finding"]["code"] == "weights_mismatch" for f in fresh[0][1])
    kept.forget()
    memory.forget()
    plans = PlansKept()
    for (sample, t), expected in zip(samples * 2, fresh * 2, strict=True):
        assert _said(sample, t, plans) == expected


def test_the_same_engines_are_planned_once_and_listed_as_before():
    plans, catalog = PlansKept(), load_catalog()
    first = plan_fleet(_base(), catalog, None, plans)
    again = plan_fleet(_base(), catalog, None, plans)
    assert again.engines is first.engines  # the very list: the judge keeps its answers by it
    moved = plan_fleet(_engine(_base(), 0, pool_tokens=1), catalog, None, plans)
    assert moved.engines is not first.engines
    assert all(a is b for a, b in zip(moved.engines[1:], first.engines[1:], strict=True))


def test_two_judges_by_other_thresholds_each_keep_their_own():
    """The fleet's judge and a node's beside it alternate: each finds its own words, never the other's."""
    planned = plan_fleet(_short(), load_catalog())
    t = Thresholds()
    expected = {id(x): [f.model_dump() for f in judge_fleet(planned, x)] for x in (t, LOOSE)}
    assert expected[id(t)] != expected[id(LOOSE)]
    for x in (t, LOOSE, t, LOOSE):
        assert [f.model_dump() for f in judge_fleet(planned, x)] == expected[id(x)]
