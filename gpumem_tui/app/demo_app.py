"""A deterministic app over the simulated node, for the screenshots and the app tests: a clock that moves
only when told, no polling timer, and the screen's time taken from the node."""

from __future__ import annotations

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.catalog import Catalog
from gpumem_tui.demo import ManualClock, load_scenario
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.demo.plan import scenario_plan
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.diagnosis.overlays import ManualPlan


def demo_app(
    scenario: str, clock: ManualClock, catalog: Catalog, plan: ManualPlan | None = None, **options
) -> GpuMemApp:
    """The scenario's node on `clock` (the caller moves it), judged against `plan`, else the plan the
    scenario was made with; `options` go to GpuMemApp."""
    feed = DemoFeed(scenario, clock)
    manual = plan if plan is not None else scenario_plan(load_scenario(scenario), catalog)
    return GpuMemApp(feed, Judge(catalog, manual), poll=False, clock=lambda: feed.node.timestamp, **options)
