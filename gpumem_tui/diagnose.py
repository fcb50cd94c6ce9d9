"""Plan vs actual: findings from the plans, the current sample and the recent history (pure), and `judge`,
which makes the plans and the findings in one call for the app."""

from __future__ import annotations

from gpumem_tui.autoplan import EnginePlan, engine_plans, plan_by_gpu
from gpumem_tui.catalog import Catalog
from gpumem_tui.findings import SEVERITY_ORDER, Finding, Thresholds, engines, memory, node, plan, starting
from gpumem_tui.findings.situation import Situation
from gpumem_tui.history import History
from gpumem_tui.models import Sample
from gpumem_tui.overlays import ManualPlan
from gpumem_tui.planner.overlay import GpuOverlay

RULES = (
    node.nvml_unavailable,
    node.gpu_lost,
    starting.engine_down,
    plan.plan_mismatch,
    plan.weights_mismatch,
    plan.kv_pool_short,
    memory.headroom_low,
    memory.foreign_process,
    memory.unattributed_memory,
    engines.kv_saturated,
    engines.context_too_long,
    plan.plan_notes,
)


def diagnose(plans: list[EnginePlan], sample: Sample, history: History, thresholds: Thresholds) -> list[Finding]:
    """Every finding, most severe first (stable order within a severity)."""
    situation = Situation(plans, sample, history, thresholds)
    found = [finding for rule in RULES for finding in rule(situation)]
    return sorted(found, key=lambda f: -SEVERITY_ORDER[f.severity])


def judge(
    sample: Sample,
    history: History,
    catalog: Catalog,
    manual_plan: ManualPlan | None = None,
    thresholds: Thresholds | None = None,
) -> tuple[dict[int, GpuOverlay], list[Finding]]:
    """The overlay to draw over each GPU and the findings, for one sample (already added to `history`)."""
    plans = engine_plans(sample, catalog, manual_plan)
    return plan_by_gpu(plans), diagnose(plans, sample, history, thresholds or Thresholds())
