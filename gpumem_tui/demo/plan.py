"""The plan a simulated deployment was made with, when its scenario says it was planned differently from
how it was launched (`planned_format`): the manual plan a demo checks against."""

from __future__ import annotations

from gpumem_tui.catalog import Catalog
from gpumem_tui.demo import Scenario
from gpumem_tui.diagnosis.overlays import ManualPlan


def scenario_plan(scenario: Scenario, catalog: Catalog) -> ManualPlan | None:
    """A ManualPlan for the first engine whose scenario entry names a `planned_format`, else None."""
    engine = next((e for e in scenario.engines if e.planned_format), None)
    if engine is None or engine.planned_format is None:
        return None
    return ManualPlan.with_weights(
        catalog,
        catalog.model(engine.model),
        engine.planned_format,
        kv_cache_dtype=engine.kv_cache_dtype,
        max_model_len=engine.max_model_len,
        utilization=engine.gpu_memory_utilization,
        tp=len(engine.gpus),
        source="scenario",
    )
