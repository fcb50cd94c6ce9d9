"""Every finding code, one entry each: its severities, what it means in one line, the node's rule that raises
it, the one function that decides it, and which views judge it (a node, the fleet, or both).

`diagnose` runs the rules in this table's order; a code with no rule here is raised by another code's rule,
outside the rules, or only by the fleet's judge. `FindingCode` (the type of `Finding.code`) and
`docs/check-json.md` list exactly these codes; tests hold all three together and check that every module
raising a code calls its decider (tests/diagnosis/test_finding_deciders.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

from gpumem_tui.diagnosis.findings import engines, memory, node, plan, starting
from gpumem_tui.diagnosis.findings.records import Finding, FindingCode, Severity
from gpumem_tui.diagnosis.findings.situation import Situation

Rule = Callable[[Situation], list[Finding]]
View = Literal["node", "fleet"]


class FindingKind(NamedTuple):
    """One finding code."""

    code: FindingCode
    severities: tuple[Severity, ...]
    """Every severity it can have, the usual one first."""
    meaning: str
    decided_by: str
    """`module:function` under gpumem_tui.diagnosis: the one function that decides when the code is raised and
    how severe; every view that raises it calls that function."""
    rule: Rule | None = None
    """The rule `diagnose` runs for it on a node (None: raised by another code's rule, or elsewhere)."""
    views: tuple[View, ...] = ("node",)
    """Who judges it: a node (`check`, the TUI, the exporter), the fleet's judge (`fleet check`), or both."""


NODE_AND_FLEET: tuple[View, ...] = ("node", "fleet")
FLEET: tuple[View, ...] = ("fleet",)

FINDINGS: tuple[FindingKind, ...] = (
    FindingKind(
        "nvml_unavailable",
        ("critical",),
        "NVML gave no GPU at all",
        "findings.node:nvml_unavailable",
        node.nvml_unavailable,
    ),
    FindingKind("gpu_lost", ("critical",), "a GPU stopped answering", "findings.node:gpu_lost", node.gpu_lost),
    FindingKind(
        "gpu_not_accessible",
        ("info",),
        "NVML counts GPUs this process may not open (a cgroup or container device list)",
        "findings.node:gpu_not_accessible",
        node.gpu_not_accessible,
    ),
    FindingKind(
        "engine_down",
        ("warning", "critical"),
        "an engine endpoint does not answer and is not starting",
        "findings.starting:down_severity",
        starting.engine_down,
        NODE_AND_FLEET,
    ),
    FindingKind(
        "engine_starting",
        ("info",),
        "an engine that never answered is still loading (its memory grows)",
        "findings.starting:engine_down",
    ),
    FindingKind(
        "plan_mismatch",
        ("warning",),
        "a hand-set plan is for another model, KV dtype, split or GPU than runs",
        "findings.plan:plan_mismatch",
        plan.plan_mismatch,
    ),
    FindingKind(
        "plan_renamed",
        ("info",),
        "a hand-set plan names another model of the same architecture",
        "findings.plan:plan_mismatch",
    ),
    FindingKind(
        "weights_mismatch",
        ("warning", "critical"),
        "the engine's weights differ from the plan's",
        "findings.plan:weights_severity",
        plan.weights_mismatch,
        NODE_AND_FLEET,
    ),
    FindingKind(
        "kv_pool_short",
        ("warning", "critical"),
        "the engine's KV pool is smaller than planned",
        "findings.plan:pool_short_severity",
        plan.kv_pool_short,
        NODE_AND_FLEET,
    ),
    FindingKind(
        "headroom_low",
        ("warning", "critical", "info"),
        "little free memory is left on a GPU",
        "findings.memory:headroom_severity",
        memory.headroom_low,
        NODE_AND_FLEET,
    ),
    FindingKind(
        "foreign_process",
        ("warning", "critical"),
        "a process that is not the engine holds memory on its GPU",
        "findings.memory:foreign_process",
        memory.foreign_process,
    ),
    FindingKind(
        "unattributed_memory",
        ("warning", "info"),
        "used memory no listed process accounts for (info: PID namespaces differ, likely the engine's own)",
        "findings.memory:unattributed_memory",
        memory.unattributed_memory,
    ),
    FindingKind(
        "pid_namespaces_differ",
        ("info",),
        "NVML's pids are not the ones seen here (a container): engines are placed by their GPUs' UUIDs",
        "findings.node:pid_namespaces_differ",
        node.pid_namespaces_differ,
    ),
    FindingKind(
        "engine_value_implausible",
        ("warning",),
        "an engine reports a value that cannot be true",
        "findings.engines:engine_value_implausible",
        engines.engine_value_implausible,
    ),
    FindingKind(
        "kv_saturated",
        ("warning",),
        "the KV cache is full and requests wait or are preempted",
        "findings.engines:saturated",
        engines.kv_saturated,
        NODE_AND_FLEET,
    ),
    FindingKind(
        "context_too_long",
        ("warning", "critical"),
        "the plan's users at its max length do not fit the KV pool",
        "findings.engines:context_too_long",
        engines.context_too_long,
    ),
    FindingKind(
        "plan_note",
        ("info", "warning"),
        "the planner's own warnings about the plan",
        "findings.plan:note_severity",
        plan.plan_notes,
        NODE_AND_FLEET,
    ),
    FindingKind(
        "engine_exited",
        ("critical",),
        "an engine that held GPU memory is gone, and why",
        "findings.exit:engine_exited",  # forensics.Investigation raises it
    ),
    FindingKind(
        "refresh_failed",
        ("warning",),
        "the last refresh failed; the TUI shows the last sample, the exporter no series of the node",
        "findings.node:refresh_failed",  # the app and the exporter raise it
    ),
    FindingKind(
        "source_stale",
        ("warning",),
        "fleet: a node stopped reporting to Prometheus, a query failed, or the server answered in part",
        "fleet.stale:source_stale",
        views=FLEET,
    ),
    FindingKind(
        "not_joined",
        ("info",),
        "fleet: a vLLM engine whose GPUs could not be found in dcgm-exporter's series",
        "fleet.engines:not_joined",
        views=FLEET,
    ),
    FindingKind(
        "config_drift",
        ("warning",),
        "fleet: one model_name served with different vllm:cache_config_info settings",
        "fleet.engines:config_drift",
        views=FLEET,
    ),
)

BY_CODE: dict[str, FindingKind] = {kind.code: kind for kind in FINDINGS}
RULES: tuple[Rule, ...] = tuple(kind.rule for kind in FINDINGS if kind.rule is not None)
