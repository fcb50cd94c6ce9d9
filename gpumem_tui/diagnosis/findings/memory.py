"""Findings about a card's memory: too little free, a foreign process, memory no process accounts for."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import EnginePlan, measured_facts
from gpumem_tui.diagnosis.findings.differ import mismatched
from gpumem_tui.diagnosis.findings.records import Finding, Severity, Thresholds
from gpumem_tui.diagnosis.findings.situation import Situation, duration, free_bytes, percent
from gpumem_tui.diagnosis.findings.trend import full_after
from gpumem_tui.diagnosis.findings.words import compose, gpus
from gpumem_tui.diagnosis.measured import endpoint_gpus
from gpumem_tui.models import GpuRecord
from gpumem_tui.sources.engines.registry import advice
from gpumem_tui.units import said

AS_PLANNED_ADVICE = "nothing: the engine's gpu_memory_utilization leaves this much on purpose"
"""What to try about headroom as planned, on a node and in the fleet alike."""


def headroom_low(s: Situation) -> list[Finding]:
    findings = []
    for gpu in s.live_gpus():
        free, total = free_bytes(gpu), gpu.memory_total_bytes or 0
        if free is None:
            continue
        plan = s.plan_on(gpu.index)
        if plan is not None and mismatched(plan):
            plan = measured_facts(plan)  # a plan for something else says nothing of what this card should leave
        planned_free = plan.overlay.free_bytes if plan and plan.overlay else None
        severity = headroom_severity(free, total, planned_free, s.thresholds)
        if severity is not None:
            findings.append(_headroom(s, gpu, free, total, plan, planned_free, severity))
    return findings


def headroom_severity(free: int, total: int, planned_free: float | None, t: Thresholds) -> Severity | None:
    """The one rule of `headroom_low`, the node's and the fleet's: None with free memory at or over the warning
    fraction of the card, critical under the critical fraction, info where the plan leaves that much on
    purpose (`as_planned`), else a warning."""
    if free >= t.headroom_warning_fraction * total:
        return None
    if free < t.headroom_critical_fraction * total:
        return "critical"
    return "info" if as_planned(free, total, planned_free, t) else "warning"


def as_planned(free: int, total: int, planned_free: float | None, t: Thresholds) -> bool:
    """Free memory the plan leaves on purpose (`planned_free`, within the tolerance), and not critical."""
    if planned_free is None or free < t.headroom_critical_fraction * total:
        return False
    return free >= planned_free - t.headroom_plan_tolerance_fraction * total


def _headroom(
    s: Situation,
    gpu: GpuRecord,
    free: int,
    total: int,
    plan: EnginePlan | None,
    planned_free: float | None,
    severity: Severity,
) -> Finding:
    words = f"{said(free)} free of {said(total)} ({percent(free / total)} of the card)"
    if plan is not None and planned_free is not None:
        words += f"; the {plan.label} plan leaves {said(max(0, planned_free))}"
    trend, full = _trend_words(s, gpu, free)
    return Finding(
        severity=severity,
        code="headroom_low",
        title=compose(
            "free memory low as planned" if severity == "info" else "memory nearly full",
            gpus([gpu.index]),
            f"{said(free)} free ({percent(free / total)})",
        ),
        explanation=f"{words}. {trend}",
        try_this=headroom_advice(severity, full, _kind_on(s, gpu.index)),
        gpu_index=gpu.index,
    )


def headroom_advice(severity: Severity, full_in_s: float | None, kind: str | None = None) -> str:
    """What to try about low headroom: nothing only where the plan leaves it on purpose and nothing says the
    card fills; where the trend says it does, who grows, even as planned (`kind`: the GPU's engine's)."""
    if severity == "info" and full_in_s is None:
        return AS_PLANNED_ADVICE
    memory = advice(kind).memory
    if severity == "info":
        return (
            "watch who grows (the process list): the plan leaves this much free on purpose, yet used memory "
            f"still grows; if it keeps on, lower {memory} or move other work off this GPU"
        )
    return (
        f"find who grew (the process list, or `check --replay` on a recording); lower {memory} or move other "
        "work off this GPU"
    )


def _kind_on(s: Situation, index: int) -> str | None:
    """The kind of the first engine that holds memory on GPU `index`, where one says."""
    for endpoint in s.sample.engines:
        if endpoint.records and index in endpoint_gpus(s.sample, endpoint):
            return endpoint.records[0].engine
    return None


def _trend_words(s: Situation, gpu: GpuRecord, free: int) -> tuple[str, float | None]:
    """The trend in words, and the seconds until the card is full at its rate (None when it does not grow)."""
    points, slope = s.trend(gpu.index)
    if slope is None:
        return "No trend yet (too little history).", None
    full = full_after(slope, free, s.thresholds.trend_min_bytes_per_s)
    span = points[-1][0] - points[0][0]
    if full is None:
        return f"Used memory is flat over the last {duration(span)} ({said(slope * 60)}/min).", None
    words = f"Over the last {duration(span)} used memory grew {said(slope * 60)}/min: at that rate the card is "
    return words + f"{_full_in(full)}.", full


def _full_in(seconds: float) -> str:
    """`full in about 2 min`; `full now` once the rate fills what is free within a second."""
    return "full now" if seconds < 1 else f"full in about {duration(seconds)}"


def foreign_process(s: Situation) -> list[Finding]:
    findings = []
    for index in sorted(s.engine_gpus):
        gpu = next((g for g in s.live_gpus() if g.index == index), None)
        for process in s.processes_on(index):
            held = process.gpu_memory_bytes or 0
            if process.pid in s.engine_pids or held < s.thresholds.foreign_min_bytes:
                continue
            findings.append(_foreign(s, gpu, process, held))
    return findings


def _foreign(s: Situation, gpu: GpuRecord | None, process, held: int) -> Finding:
    total = gpu.memory_total_bytes if gpu else None
    free = free_bytes(gpu) if gpu else None
    tight = total is not None and free is not None and free < s.thresholds.headroom_critical_fraction * total
    name = process.name or "a process this namespace cannot see"
    about = (
        [name] + ([f"user {process.user}"] if process.user else []) + ([f"pod {process.pod}"] if process.pod else [])
    )
    who = f"pid {process.pid} ({', '.join(about)})"
    share = f" ({percent(held / total)} of the card)" if total else ""
    command = " ".join(process.cmdline or [])[:160]
    return Finding(
        severity="critical" if tight else "warning",
        code="foreign_process",
        title=compose("other process", gpus([process.gpu_index]), f"{name} pid {process.pid} holds {said(held)}")
        + " beside the engine",
        explanation=f"{who} is not the engine and holds {said(held)}{share} on the engine's GPU"
        + (f"; the card has {said(free)} free" if free is not None else "")
        + (f". Command: {command}" if command else "."),
        try_this="ask its owner to move it to another GPU (CUDA_VISIBLE_DEVICES) or stop it; the engine sized its "
        "memory assuming the card was its own",
        gpu_index=process.gpu_index,
        pid=process.pid,
    )


def unattributed_memory(s: Situation) -> list[Finding]:
    """Used memory the listed processes do not account for. Not on a GPU NVML read only in part this sample
    (a SourceError names it): a process list that failed is unknown, not empty; so is every GPU's on a node
    read from Prometheus (its notes say so: no pids, and engines' processes are in no series). Nor where NVML
    lists a process without its memory (a MIG card's own list, read when its MIG devices could not be): what
    it holds is unknown, not nothing."""
    findings = []
    if any(e.source == "prometheus" for e in s.sample.errors):
        return []  # a node read from Prometheus: its engines' processes are never listed
    partial = {e.gpu_index for e in s.sample.errors if e.source == "nvml" and e.gpu_index is not None}
    for gpu in s.live_gpus():
        if gpu.memory_used_bytes is None or gpu.index in partial:
            continue
        listed = sum(p.gpu_memory_bytes or 0 for p in s.processes_on(gpu.index))
        missing = gpu.memory_used_bytes - listed
        if missing < s.thresholds.unattributed_min_bytes:
            continue
        placed = [p.pid for p in s.processes_on(gpu.index) if p.visible is False and p.pid in s.engine_pids]
        if placed:
            findings.append(_across_namespaces(s, gpu, listed, missing, placed))
            continue
        if any(p.gpu_memory_bytes is None for p in s.processes_on(gpu.index)):
            continue
        findings.append(
            Finding(
                severity="warning",
                code="unattributed_memory",
                title=compose("memory no visible process holds", gpus([gpu.index]), f"{said(missing)} used"),
                explanation=f"NVML says {said(gpu.memory_used_bytes)} used; the processes it lists hold "
                f"{said(listed)}. The rest belongs to processes in another PID namespace (a container), "
                "the driver, or a process that leaked memory.",
                try_this="run `nvidia-smi` on the host (outside containers) to see every process; a leak "
                "goes away when its process exits",
                gpu_index=gpu.index,
            )
        )
    return findings


def _across_namespaces(s: Situation, gpu: GpuRecord, listed: int, missing: int, placed: list[int]) -> Finding:
    """Memory NVML does not put on a pid, on a GPU whose engine was placed there by its UUID: PID namespaces
    differ (this runs in a container), so it is most likely that engine's own, not another container's."""
    engine = next((e.url for e in s.sample.engines if set(e.pids) & set(placed)), "the engine")
    return Finding(
        severity="info",
        code="unattributed_memory",
        title=compose(
            "memory NVML puts on no pid here", gpus([gpu.index]), f"{said(missing)} used (PID namespaces differ)"
        ),
        explanation=f"NVML says {said(gpu.memory_used_bytes or 0)} used; the processes it lists hold {said(listed)}. "
        "PID namespaces differ: NVML reports host pids, which this namespace cannot see, and puts the rest on "
        f"none of them. The engine at {engine} is placed on this GPU by its UUID, so the rest is most likely its "
        "own memory.",
        try_this="run gpumem-tui on the host, or in a pod with hostPID: true, to see every process and what it holds",
        gpu_index=gpu.index,
    )
