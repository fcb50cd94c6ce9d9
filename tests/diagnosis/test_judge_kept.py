"""The fleet's judge keeps what it read of the engines' facts and each node's count from one sample to the next
(kept.py, memory.py): a sample judged after others says exactly what a judge from nothing says of it, and where
only the engines' gauges moved the answers are the very ones of the last sample."""

from __future__ import annotations

import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.fleet import kept, memory
from gpumem_tui.diagnosis.fleet.headroom import engine_shares
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.records import updated
from gpumem_tui.sources.prometheus.records import (
    FleetEngine,
    FleetGpu,
    FleetNode,
    FleetSample,
    NodeFinding,
    NodeLow,
)
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


# samples drawn from pools of records, the same objects again and again as the reader gives them (a node's `low`,
# an engine's record with only its gauges changed), to find a sample the kept parts answer otherwise than a judge
# from nothing
LOWS = [
    NodeLow(gpus=g, least_free_bytes=round(f * MIB), least_free_total_bytes=TOTAL)
    for g, f in [(8, 6000), (2, 6000), (8, 500), (8, 7000), (0, 6000), (8, 6000)]
]
SHARES = [0.92, 0.80, None, float("nan"), 1.0]
_MADE: dict[tuple, FleetEngine] = {}
_NODES: dict[tuple, FleetNode] = {}


def _template(node: str | None, share: float | None, joined: str, block: str, pod: str, gpus: int) -> FleetEngine:
    """One record for each set of facts, as the reader keeps one for each engine of a join."""
    key = (node, share, joined, block, pod, gpus)
    if key not in _MADE:
        _MADE[key] = _engine(
            node,
            gpu_memory_utilization=share,
            joined=joined,
            settings={"block_size": block} if block else {},
            pod=pod,
            gpus=[f"GPU-{node}-{i}" for i in range(gpus)],
        )
    return _MADE[key]


def _node(name: str, gpus: int, low: int) -> FleetNode:
    """One record for each node's figures, as the reader keeps a node's between two evaluations of the rules."""
    key = (name, gpus, low)
    if key not in _NODES:
        _NODES[key] = FleetNode(name=name, gpus=gpus, cards={CARD: 8}, low=LOWS[low])
    return _NODES[key]


FACTS = [  # what each of an engine's facts may be (node, utilization, joined, block size, pod, GPUs)
    ["n0", "n1", None],
    SHARES,
    ["found", "not joined"],
    ["16", "32", ""],
    ["pod-a", "pod-b"],
    [8, 2],
]
THRESHOLDS = [None, Thresholds(headroom_warning_fraction=0.05), Thresholds(headroom_warning_fraction=0.12)]
GPUS = [  # n1's GPUs read one by one, or none
    [],
    [FleetGpu(node="n1", uuid=f"GPU-n1-{i}", card=CARD, free_bytes=round(f * MIB), total_bytes=TOTAL) for i, f in
     enumerate([6000, 500])],
]  # fmt: skip
SAYS = [NodeFinding(node="n0", code="headroom_low", severity="warning", gpu="GPU-n0-0")]
EXPORTERS = [  # n1 runs `gpumem-tui export` (stale or not), which says n0's headroom too, or nothing
    {},
    {"exporter_nodes": {"n1": 10.0}, "node_findings": SAYS},
    {"exporter_nodes": {"n1": 10.0}},
    {"exporter_nodes": {"n1": 900.0}, "node_findings": SAYS},
]


STALE = [{}, {"n0": 900.0}, {"n1": 900.0}]
OPTIONS = {"stale": STALE, "read": GPUS, "thresholds": THRESHOLDS, "exporter": EXPORTERS}
"""What else of a sample changes, each the first of its list to start with."""


def _engines_changed(draw, engines: list[list[int]]) -> None:
    """One fact of an engine changed, or an engine come or gone (each engine as indices into FACTS)."""
    if engines and draw(st.booleans()):
        e = draw(st.sampled_from(engines))
        which = draw(st.integers(0, len(FACTS) - 1))
        e[which] = draw(st.integers(0, len(FACTS[which]) - 1))
    elif engines and draw(st.booleans()):
        engines.pop(draw(st.integers(0, len(engines) - 1)))
    else:
        engines.insert(draw(st.integers(0, len(engines))), [draw(st.integers(0, len(f) - 1)) for f in FACTS])


def _nodes_changed(draw, nodes: dict[str, tuple[int, int]]) -> None:
    """A node's GPUs or `low` changed, or a node come or gone (name -> (GPUs, index into LOWS))."""
    name = draw(st.sampled_from(["n0", "n1", "n2"]))
    if name in nodes and draw(st.booleans()):
        del nodes[name]
    else:
        nodes[name] = (draw(st.sampled_from([8, 2, 16])), draw(st.integers(0, len(LOWS) - 1)))


@st.composite
def _samples(draw) -> list[tuple[FleetSample, Thresholds | None]]:
    """A run of samples, each the last with one thing changed, as the reader gives them from one refresh to the
    next: the very engines list, the gauges moved, an engine's facts, a node's, a stale node, the GPUs read one
    by one, the thresholds, a node's own exporter."""
    engines = [[0] * len(FACTS), [1, 0, 0, 0, 1, 0]]
    nodes = {"n0": (8, 0), "n1": (8, 0)}
    chosen = dict.fromkeys(OPTIONS, 0)
    samples: list[tuple[FleetSample, Thresholds | None]] = []
    listed: list[FleetEngine] = []
    for step in range(draw(st.integers(2, 8))):
        change = "gauges" if step == 0 else draw(st.sampled_from(["same list", "gauges", "engines", "nodes", *OPTIONS]))
        if change == "engines":
            _engines_changed(draw, engines)
        elif change == "nodes":
            _nodes_changed(draw, nodes)
        elif change in OPTIONS:
            chosen[change] = draw(st.integers(0, len(OPTIONS[change]) - 1))
        if change != "same list":  # the gauges moved: each engine a new record
            made = [_template(*(FACTS[i][j] for i, j in enumerate(e))) for e in engines]
            listed = [updated(e, {"kv_usage_fraction": draw(st.sampled_from([0.1, 0.99]))}) for e in made]
        node_list = [_node(name, gpus, low) for name, (gpus, low) in nodes.items()]
        update = {"stale_nodes": STALE[chosen["stale"]], **EXPORTERS[chosen["exporter"]]}
        sample = _sample(node_list, listed, GPUS[chosen["read"]]).model_copy(update=update)
        samples.append((sample, THRESHOLDS[chosen["thresholds"]]))
    return samples


@settings(max_examples=300, deadline=None)
@given(_samples())
def test_any_run_of_samples_is_judged_as_from_nothing(samples):
    """Each sample of a run, judged after the others, says what a judge from nothing says of it."""
    fresh = [_fresh(s, t) for s, t in samples]
    kept.forget()
    memory.forget()
    for (sample, t), expected in zip(samples, fresh, strict=True):
        assert _said(sample, t) == expected


@pytest.mark.parametrize("runs", [SAMPLES, UNREAD], ids=["a node read GPU by GPU", "every node by its count"])
def test_two_threads_with_other_thresholds_each_get_their_own_answers(runs):
    """Two judges in two threads at once, each by its own thresholds (the memos are the module's, shared by every
    judge in the process): a node's answer kept by one is never the other's."""
    loose = Thresholds(headroom_warning_fraction=0.05)
    samples = [s for s, _ in runs]
    want = {id(s): (_fresh(s, None), _fresh(s, loose)) for s in samples}
    assert any(by_default != by_loose for by_default, by_loose in want.values())  # the test can fail
    wrong: list[tuple[int, int]] = []

    def judge(which: int, t: Thresholds | None) -> None:
        for _ in range(150):
            wrong.extend((which, i) for i, s in enumerate(samples) if _said(s, t) != want[id(s)][which])

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the threads take turns often
    try:
        threads = [threading.Thread(target=judge, args=args) for args in ((0, None), (1, loose))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    assert wrong == []


PAIR = [  # one model served with two cache settings (drift, naming both), each node's GPUs as its engine planned
    _engine("n0"),
    _engine("n1", pod=None, instance="10.0.0.1:8000", engine="1", settings={"block_size": "32"}),
]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("node", "n2"),
        ("gpu_memory_utilization", 0.80),
        ("joined", "not joined"),
        ("gpus", ["GPU-n0-0"]),
        ("settings", {"block_size": "32"}),
        ("model_name", "other"),
        ("namespace", "other"),
        ("pod", "other"),
        ("instance", "10.0.0.2:8000"),
        ("engine", "2"),
    ],
)
def test_each_fact_of_an_engine_judged_anew(field, value):
    """Each fact the kept parts read of an engine (engine_stable.py), changed alone between two samples whose
    gauges stay: the second judged after the first says what a judge from nothing says of it."""
    which = 1 if field in ("instance", "engine") else 0  # the one whose name shows them
    before = _sample(NODES[:2], PAIR)
    after = _sample(NODES[:2], [e.model_copy(update={field: value}) if i == which else e for i, e in enumerate(PAIR)])
    assert _fresh(after, None) != _fresh(before, None)  # the fact counts: the test can fail
    expected = _fresh(after, None)
    kept.forget()
    memory.forget()
    _said(before, None)
    assert _said(after, None) == expected


def test_a_node_s_read_judged_beside_the_fleet_leaves_the_fleet_s_answers_kept():
    """The node screen over the same Prometheus judges its node's read and that node's exporters' findings
    between two of the fleet screen's samples: the fleet's shares are still the ones kept."""
    kept.forget()
    shares = engine_shares(BASE.engines)
    judge_fleet(_with(BASE, engines=BASE.engines[:1], nodes=BASE.nodes[:1]))  # a node's read
    judge_fleet(FleetSample(source="s", evaluated_at=0.0))  # its exporters' findings alone
    assert engine_shares(list(BASE.engines)) is shares
