"""Plan vs actual: findings from the plans, the current sample and the recent history (pure). The app and
`check` call it through `forensics.Investigation`, which also explains an engine's exit."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.findings import SEVERITY_ORDER, Finding, Thresholds, engines, memory, node, plan, starting
from gpumem_tui.diagnosis.findings.situation import Situation
from gpumem_tui.diagnosis.history import History
from gpumem_tui.models import Sample

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
    engines.engine_value_implausible,
    engines.kv_saturated,
    engines.context_too_long,
    plan.plan_notes,
)


def diagnose(plans: list[EnginePlan], sample: Sample, history: History, thresholds: Thresholds) -> list[Finding]:
    """Every finding, most severe first (stable order within a severity)."""
    situation = Situation(plans, sample, history, thresholds)
    found = [finding for rule in RULES for finding in rule(situation)]
    return sorted(found, key=lambda f: -SEVERITY_ORDER[f.severity])
