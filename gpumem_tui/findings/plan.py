"""Findings that compare the engine with its plan: the weights it holds, the KV pool it carved."""

from __future__ import annotations

from gpumem_tui.autoplan import EnginePlan
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.findings.records import Finding, Severity
from gpumem_tui.findings.situation import Situation, gib
from gpumem_tui.planner.kv import layer_bytes_per_token
from gpumem_tui.planner.overlay import CUDA_CONTEXT_BYTES


def serving(s: Situation, plan: EnginePlan) -> tuple[EndpointStatus, EngineRecord] | None:
    """The plan's endpoint and its record, when it answered this time."""
    endpoint = next((e for e in s.sample.engines if e.url == plan.endpoint), None)
    if endpoint is None or endpoint.state != "ok" or not endpoint.records:
        return None
    record = next((r for r in endpoint.records if r.model), endpoint.records[0])
    return endpoint, record


def kv_bytes_per_token_per_gpu(plan: EnginePlan) -> int:
    settings = plan.settings
    assert settings is not None
    return settings.model.layers * layer_bytes_per_token(settings.model, settings.kv_cache_dtype, settings.tp)


def weights_mismatch(s: Situation) -> list[Finding]:
    findings = []
    for plan in s.plans:
        live = serving(s, plan)
        if plan.prediction is None or live is None or live[1].kv_pool_tokens is None or not plan.gpu_indices:
            continue
        finding = _weights(s, plan, live[0], live[1])
        if finding is not None:
            findings.append(finding)
    return findings


def _weights(s: Situation, plan: EnginePlan, endpoint: EndpointStatus, record: EngineRecord) -> Finding | None:
    p, t, gpu = plan.prediction, s.thresholds, plan.gpu_indices[0]
    held = sum(x.gpu_memory_bytes or 0 for x in s.processes_on(gpu) if x.pid in endpoint.pids)
    if not held or not p.weights_bytes:
        return None
    kv = (record.kv_pool_tokens or 0) * kv_bytes_per_token_per_gpu(plan)
    others = CUDA_CONTEXT_BYTES + p.non_torch_bytes + p.cudagraph_bytes
    high = held - kv - others
    low = high - p.activation_peak_bytes  # activations grow back with the batch, up to the profiled peak
    estimate = min(max(p.weights_bytes, low), high)
    ratio = estimate / p.weights_bytes
    if abs(ratio - 1) <= t.weights_tolerance_fraction:
        return None
    precision = ratio >= t.weights_precision_ratio or ratio <= 1 / t.weights_precision_ratio
    planned_as = plan.settings.quantization or "the checkpoint's format"
    return Finding(
        severity="critical" if precision else "warning",
        code="weights_mismatch",
        title=f"{plan.model}: weights take about {ratio:.1f}x the plan on GPU {gpu}",
        explanation=f"The engine process holds {gib(held)} on GPU {gpu}; less its KV pool ({record.kv_pool_tokens:,} "
        f"tokens = {gib(kv)}) and about {gib(others)} of context, non-torch memory and CUDA graphs, that leaves "
        f"about {gib(estimate)} of weights. The {plan.label} plan ({planned_as}) says {gib(p.weights_bytes)}."
        + (" Twice (or half) the planned weights is the sign of the wrong precision loaded." if precision else ""),
        try_this=f"check the launch flags: the plan assumes {planned_as}; restart vLLM with the matching "
        "--quantization / --dtype (or fix the plan)",
        gpu_index=gpu,
        endpoint=plan.endpoint,
    )


def kv_pool_short(s: Situation) -> list[Finding]:
    findings = []
    for plan in s.plans:
        live = serving(s, plan)
        if plan.prediction is None or live is None or live[1].kv_pool_tokens is None:
            continue
        planned, measured = plan.prediction.kv_cache_tokens, live[1].kv_pool_tokens
        if planned <= 0 or measured >= planned * (1 - s.thresholds.kv_pool_tolerance_fraction):
            continue
        findings.append(_short(plan, planned, measured))
    return findings


def _short(plan: EnginePlan, planned: int, measured: int) -> Finding:
    length = plan.prediction.max_model_len
    short = planned - measured
    return Finding(
        severity="critical" if measured < planned / 2 else "warning",
        code="kv_pool_short",
        title=f"{plan.model}: KV pool {short:,} tokens smaller than planned",
        explanation=f"The engine carved {measured:,} tokens of KV cache; the {plan.label} plan says {planned:,}. "
        f"That is {short / length:,.1f} fewer conversations at the planned {length:,}-token context "
        f"({measured / length:,.1f} fit instead of {planned / length:,.1f}).",
        try_this="look for what took the memory: larger weights (wrong precision), another process at startup, "
        "a lower --gpu-memory-utilization than planned",
        gpu_index=plan.gpu_indices[0] if plan.gpu_indices else None,
        endpoint=plan.endpoint,
    )


def plan_notes(s: Situation) -> list[Finding]:
    """What the planner itself warns about: a plan the user set that cannot work is a warning; for a plan
    made from a running engine the engine's own numbers win, so it is only noted."""
    findings = []
    for plan in s.plans:
        if plan.prediction is None:
            continue
        severity: Severity = "warning" if plan.label == "manual" else "info"
        lines = [(line, "does not fit") for line in plan.prediction.failures]
        lines += [(line, "has a warning") for line in plan.prediction.warnings]
        for line, verdict in lines:
            findings.append(
                Finding(
                    severity=severity,
                    code="plan_note",
                    title=f"{plan.model}: the {plan.label} plan {verdict}",
                    explanation=line,
                    try_this="see `gpumem-tui plan` for the whole sizing",
                    endpoint=plan.endpoint,
                )
            )
    return findings
