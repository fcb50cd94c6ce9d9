"""Rig for the diagnosis tests: a simulated node stepped to a moment, its plans and findings."""

from __future__ import annotations

import pytest

from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.autoplan import engine_plans
from gpumem_tui.diagnosis.diagnose import diagnose
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.history import History


@pytest.fixture
def run_demo(catalog):
    """`await run_demo(scenario, at, manual=None)` -> (plans, findings), after two minutes of history.
    `faults`: (symbol, return code, GPU) the fake driver answers with for the last sample."""

    async def run(name: str, at: float, manual=None, step: float = 5.0, faults=()):
        clock, history = ManualClock(), History()
        feed = DemoFeed(name, clock)
        try:
            moment = max(0.0, at - 120)
            while moment <= at:
                clock.set(moment)
                if moment + step > at:
                    for symbol, code, gpu in faults:
                        feed.driver.fail(symbol, code, gpu)
                sample = await feed.sample()
                history.add(sample)
                moment += step
        finally:
            await feed.aclose()
        plans = engine_plans(sample, catalog, manual)
        return plans, diagnose(plans, sample, history, Thresholds())

    return run
