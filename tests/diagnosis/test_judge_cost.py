"""What judging a sample costs, held by behaviour: the findings are worded in each of the screen's units from
numbers computed once (the memory trend, what more capacity would buy), and an engine's prediction is made
once for settings that do not change from sample to sample."""

from __future__ import annotations

import asyncio

from gpumem_tui.app.node import UNITS
from gpumem_tui.demo import ManualClock, load_scenario
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.demo.plan import scenario_plan
from gpumem_tui.diagnosis import autoplan
from gpumem_tui.diagnosis.findings import Thresholds, situation
from gpumem_tui.diagnosis.forensics import Investigation, memory_window_s


async def samples(scenario: str, moments) -> list:
    clock = ManualClock(moments[0])
    feed = DemoFeed(scenario, clock)
    out = []
    for t in moments:
        clock.set(t)
        out.append(await feed.sample())
    await feed.aclose()
    return out


def counted(monkeypatch, module, name: str) -> list:
    """Each call of `module.name` from now on, which still runs as it does."""
    calls: list = []
    real = getattr(module, name)

    def count(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(module, name, count)
    return calls


def test_each_trend_and_capacity_is_computed_once_for_both_units(catalog, monkeypatch):
    busy = asyncio.run(samples("busy-node", [100, 105, 110]))
    watch = Investigation(catalog, None, Thresholds(), memory_window_s(Thresholds()), UNITS)
    for sample in busy[:-1]:
        watch.add(sample)
    slopes = counted(monkeypatch, situation, "slope_bytes_per_s")
    capacity = counted(monkeypatch, situation, "more_conversations")
    watch.add(busy[-1])
    low = [f for f in watch.findings_in(UNITS[0]) if f.code == "headroom_low"]
    assert low and len(slopes) == len(low)  # one trend a GPU low on headroom, worded in GB and in GiB
    assert len(capacity) == 1  # one saturated engine: the other GPUs it would take, said in both units
    said = {unit: [f.explanation for f in watch.findings_in(unit) if f.code == "kv_saturated"] for unit in UNITS}
    assert said[UNITS[0]] == said[UNITS[1]] and "more conversations" in said[UNITS[0]][0]


def test_an_engine_is_predicted_once_while_its_settings_stay(catalog, monkeypatch):
    autoplan._PREDICTIONS.clear()
    predictions = counted(monkeypatch, autoplan, "predict")
    plan = scenario_plan(load_scenario("busy-node"), catalog)
    first, second = asyncio.run(samples("busy-node", [100, 105]))
    plans = autoplan.engine_plans(first, catalog, plan)
    made = len(predictions)
    assert made and [p.prediction for p in autoplan.engine_plans(second, catalog, plan)] == [
        p.prediction for p in plans
    ]
    assert len(predictions) == made
    settings = plans[0].settings
    assert settings is not None
    longer = settings.model_copy(update={"max_model_len": settings.max_model_len // 2})
    assert autoplan.predicted(longer) == autoplan.predict(longer)
    assert len(predictions) == made + 2  # changed settings are predicted anew (and once more, by the test)
