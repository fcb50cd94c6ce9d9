"""What the memory trend predicts is said plainly: a card that the trend fills within a second is "full
now", and "try: nothing" never stands beside a prediction that the card fills."""

from __future__ import annotations

from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.history import History

from .build import H100_TOTAL, engine, gpu, process, sample
from .test_rules import run

GIB = 2**30


def _headroom(catalog, used: list[float], t0: float = 1000.0, step: float = 1.0):
    history = History()
    samples = [sample(t=t0 + step * k, gpus=[gpu(used_gib=u)]) for k, u in enumerate(used)]
    for s in samples:
        history.add(s)
    [finding] = [f for f in run(catalog, samples[-1], history) if f.code == "headroom_low"]
    return finding


def test_a_card_the_trend_fills_within_a_second_is_full_now(catalog):
    total = H100_TOTAL / GIB
    # +2 GiB a second (117+ GiB/min), the last reading leaves under 0.01 GiB free
    finding = _headroom(catalog, [total - 8.005 + 2 * k for k in range(5)])
    assert "full now" in finding.explanation, finding.explanation
    assert "full in about 0 s" not in finding.explanation


def test_as_planned_headroom_that_the_trend_fills_is_not_nothing_to_do(catalog):
    procs = [process(2100, 70.0, name="VLLM::EngineCore")]
    history = History()
    last = None
    for k in range(7):  # the engine's card grows +0.5 GiB every 10 s: full in minutes
        used = 71.5 + 0.5 * k
        last = sample(t=1000 + 10 * k, gpus=[gpu(used_gib=used)], processes=procs, engines=[engine()])
        history.add(last)
    loose = Thresholds(headroom_plan_tolerance_fraction=0.5)  # whatever is free counts as the plan's
    findings = [f for f in run(catalog, last, history, thresholds=loose) if f.code == "headroom_low"]
    predicted = [f for f in findings if "full in about" in f.explanation or "full now" in f.explanation]
    assert predicted, findings
    for finding in predicted:
        assert not finding.try_this.startswith("nothing"), finding
