"""The overview's look at a node (which nodes it reads GPU by GPU) is the judge's rule, handed to the reader:
it decides by the thresholds it is given, as the judge's headroom finding does, so both say the same."""

from __future__ import annotations

from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Result, Series
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetNode, FleetSample
from gpumem_tui.units import MIB

CARD = "NVIDIA H100 80GB HBM3"
TOTAL_MIB, FREE_MIB = 81559.0, 6000.0
"""One GPU with 7.4 % free: under the 10 % look; its engine's 0.92 leaves 8 %, within the 2 % tolerance."""
ENGINE = FleetEngine(model_name="m", node="n", gpus=["GPU-a"], joined="found", gpu_memory_utilization=0.92)


def _look(thresholds: Thresholds):
    labels = {"Hostname": "n", "modelName": CARD}
    answers = {"node_least_free": Result([Series(labels, FREE_MIB, 0.0)]), "node_low": Result([Series(labels, 1, 0.0)])}
    look = FleetRules(thresholds).looks(answers, {CARD: (TOTAL_MIB, TOTAL_MIB)}, (), 0.10)
    look.with_engines([ENGINE])
    return look, look.low("n", 1, {CARD: 1}, {}, round(TOTAL_MIB * MIB))


def test_a_gpu_its_engine_leaves_so_is_counted_not_read_one_by_one():
    look, low = _look(Thresholds())
    assert low is not None and low.gpus == 1 and low.least_free_bytes == round(FREE_MIB * MIB)
    assert look.needs == {}
    node = FleetNode(name="n", gpus=1, cards={CARD: 1}, low=low)
    found = judge_fleet(FleetSample(source="s", evaluated_at=0.0, nodes=[node], engines=[ENGINE]))
    assert [(f.finding.code, f.finding.severity) for f in found] == [("headroom_low", "info")]


def test_without_the_tolerance_the_node_needs_a_look():
    look, low = _look(Thresholds(headroom_plan_tolerance_fraction=0.0))
    assert low is None and look.needs == {"Hostname": ["n"]}
