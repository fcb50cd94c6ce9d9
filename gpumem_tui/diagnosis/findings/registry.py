"""Every finding code, one entry each: its severities, what it means in one line, and the rule that raises it.

`diagnose` runs the rules in this table's order; a code with no rule here is raised by another code's rule or
outside the rules (`made_by` says where). `FindingCode` (the type of `Finding.code`) and `docs/check-json.md`
list exactly these codes; a test holds all three together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpumem_tui.diagnosis.findings import engines, memory, node, plan, starting
from gpumem_tui.diagnosis.findings.records import Finding, FindingCode, Severity
from gpumem_tui.diagnosis.findings.situation import Situation

Rule = Callable[[Situation], list[Finding]]


@dataclass(frozen=True)
class FindingKind:
    """One finding code."""

    code: FindingCode
    severities: tuple[Severity, ...]
    """Every severity it can have, the usual one first."""
    meaning: str
    rule: Rule | None = None
    made_by: str = ""
    """Where a code without a rule of its own is raised."""


FINDINGS: tuple[FindingKind, ...] = (
    FindingKind("nvml_unavailable", ("critical",), "NVML gave no GPU at all", node.nvml_unavailable),
    FindingKind("gpu_lost", ("critical",), "a GPU stopped answering", node.gpu_lost),
    FindingKind(
        "gpu_not_accessible",
        ("info",),
        "NVML counts GPUs this process may not open (a cgroup or container device list)",
        node.gpu_not_accessible,
    ),
    FindingKind(
        "engine_down",
        ("warning", "critical"),
        "an engine endpoint does not answer and is not starting",
        starting.engine_down,
    ),
    FindingKind(
        "engine_starting",
        ("info",),
        "an engine that never answered is still loading (its memory grows)",
        made_by="starting.engine_down",
    ),
    FindingKind(
        "plan_mismatch",
        ("warning",),
        "a hand-set plan is for another model, KV dtype, split or GPU than runs",
        plan.plan_mismatch,
    ),
    FindingKind(
        "plan_renamed",
        ("info",),
        "a hand-set plan names another model of the same architecture",
        made_by="plan.plan_mismatch",
    ),
    FindingKind(
        "weights_mismatch",
        ("warning", "critical"),
        "the engine's weights differ from the plan's",
        plan.weights_mismatch,
    ),
    FindingKind(
        "kv_pool_short", ("warning", "critical"), "the engine's KV pool is smaller than planned", plan.kv_pool_short
    ),
    FindingKind(
        "headroom_low", ("warning", "critical", "info"), "little free memory is left on a GPU", memory.headroom_low
    ),
    FindingKind(
        "foreign_process",
        ("warning", "critical"),
        "a process that is not the engine holds memory on its GPU",
        memory.foreign_process,
    ),
    FindingKind(
        "unattributed_memory",
        ("warning", "info"),
        "used memory no listed process accounts for (info: PID namespaces differ, likely the engine's own)",
        memory.unattributed_memory,
    ),
    FindingKind(
        "pid_namespaces_differ",
        ("info",),
        "NVML's pids are not the ones seen here (a container): engines are placed by their GPUs' UUIDs",
        node.pid_namespaces_differ,
    ),
    FindingKind(
        "engine_value_implausible",
        ("warning",),
        "an engine reports a value that cannot be true",
        engines.engine_value_implausible,
    ),
    FindingKind(
        "kv_saturated",
        ("warning",),
        "the KV cache is full and requests wait or are preempted",
        engines.kv_saturated,
    ),
    FindingKind(
        "context_too_long",
        ("warning", "critical"),
        "the plan's users at its max length do not fit the KV pool",
        engines.context_too_long,
    ),
    FindingKind("plan_note", ("info", "warning"), "the planner's own warnings about the plan", plan.plan_notes),
    FindingKind(
        "engine_exited",
        ("critical",),
        "an engine that held GPU memory is gone, and why",
        made_by="forensics.Investigation (findings/exit.py)",
    ),
    FindingKind(
        "refresh_failed",
        ("warning",),
        "the last refresh failed; the TUI shows the last sample, the exporter no series of the node",
        made_by="the app and the exporter (node.refresh_failed)",
    ),
    FindingKind(
        "source_stale",
        ("warning",),
        "fleet: a node stopped reporting to Prometheus, a query failed, or the server answered in part",
        made_by="the fleet judge (diagnosis/fleet.py)",
    ),
    FindingKind(
        "not_joined",
        ("info",),
        "fleet: a vLLM engine whose GPUs could not be found in dcgm-exporter's series",
        made_by="the fleet judge (diagnosis/fleet.py)",
    ),
    FindingKind(
        "config_drift",
        ("warning",),
        "fleet: one model_name served with different vllm:cache_config_info settings",
        made_by="the fleet judge (diagnosis/fleet.py)",
    ),
)

BY_CODE: dict[str, FindingKind] = {kind.code: kind for kind in FINDINGS}
RULES: tuple[Rule, ...] = tuple(kind.rule for kind in FINDINGS if kind.rule is not None)
