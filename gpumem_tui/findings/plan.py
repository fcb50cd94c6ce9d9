"""Findings that compare the engine with its plan: a plan for something else, the weights it holds, the KV
pool it carved, what the planner itself warns about."""

from __future__ import annotations

from gpumem_tui.autoplan import EnginePlan, kv_bytes_per_token, measured_facts
from gpumem_tui.catalog import ModelSpec
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.findings.records import Finding, Severity
from gpumem_tui.findings.situation import Situation, gib
from gpumem_tui.measured import gpu_listing
from gpumem_tui.planner.overlay import CUDA_CONTEXT_BYTES


def serving(s: Situation, plan: EnginePlan) -> tuple[EndpointStatus, EngineRecord] | None:
    """The plan's endpoint and its record, when it answered this time and runs the plan's model (a plan for
    another model is `plan_mismatch`; its numbers are not compared with the engine's)."""
    endpoint = next((e for e in s.sample.engines if e.url == plan.endpoint), None)
    if endpoint is None or endpoint.state != "ok" or not endpoint.records or _other_model(plan):
        return None
    record = next((r for r in endpoint.records if r.model), endpoint.records[0])
    return endpoint, record


def plan_name(s: Situation, plan: EnginePlan) -> str:
    """Which engine a plan finding is about (its endpoint and GPUs), or the node when no engine runs."""
    if plan.endpoint is None:
        return f"{plan.model} (a plan, no engine) on {gpu_listing(plan.gpu_indices)}"
    if _other_model(plan):
        return f"{plan.label} plan for {plan.model}, over {s.engine_name(plan.endpoint, measured_facts(plan).model)}"
    return s.engine_name(plan.endpoint, plan.model)


def _other_model(plan: EnginePlan) -> bool:
    runs = measured_facts(plan).model
    return bool(runs and plan.model and runs.lower() != plan.model.lower())


def plan_mismatch(s: Situation) -> list[Finding]:
    """A hand-set plan whose model, weight format, split or GPU is not what the engine runs."""
    findings = []
    for plan in s.plans:
        running = plan.running
        if plan.endpoint is None and plan.settings is not None and plan.card != plan.settings.gpu.key:
            findings.append(_other_card(plan))
        if running is None or plan.settings is None or plan.endpoint is None:
            continue
        plan_side, engine_side, differ = _sides(plan, running)
        if not differ:
            continue
        findings.append(
            Finding(
                severity="warning",
                code="plan_mismatch",
                title=f"{s.engine_name(plan.endpoint, running.model)} is not what the {plan.label} plan is for: "
                f"{_listed(differ)} {'differs' if len(differ) == 1 else 'differ'}",
                explanation=f"The {plan.label} plan: {plan_side}. The engine runs {engine_side}. Where the two "
                "differ, so does memory: read its plan-vs-measured numbers with that in mind. What is measured "
                "(the KV pool in bytes) is counted with the engine's own model.",
                try_this="give the plan the engine's model, format and split (--model, --weights, --gpus), "
                "or leave out --model to compare with the plan made from what runs",
                gpu_index=plan.gpu_indices[0] if len(plan.gpu_indices) == 1 else None,
                endpoint=plan.endpoint,
            )
        )
    return findings


def _other_card(plan: EnginePlan) -> Finding:
    """A plan with no engine to compare, sized for another card than the one it is drawn over."""
    assert plan.settings is not None
    planned = plan.settings.gpu.key
    return Finding(
        severity="warning",
        code="plan_mismatch",
        title=f"the {plan.label} plan for {plan.model} is sized for {planned}, not this node's {plan.card}",
        explanation=f"The plan's bands are {planned}'s on {plan.settings.tp} GPU(s), drawn over "
        f"{gpu_listing(plan.gpu_indices)} ({plan.card}): the bars show what the plan takes there, not what "
        f"it would take here.",
        try_this=f"pick {plan.card} in the planner (p) to size the plan for this node",
        gpu_index=plan.gpu_indices[0] if len(plan.gpu_indices) == 1 else None,
    )


def _sides(plan: EnginePlan, running: EnginePlan) -> tuple[str, str, list[str]]:
    """Both sides in words, and the names of what differs (model, weight format, split, GPU)."""
    settings = plan.settings
    differ = []
    if _other_model(plan):
        differ.append("model")
    planned_format = _weights_format(settings.quantization, settings.model)
    if running.settings is not None and running.launch_seen:
        runs_format = _weights_format(running.settings.quantization, running.settings.model)
        if runs_format != planned_format:
            differ.append("weight format")
        runs_words = f"weights {runs_format}" + ("" if running.settings.quantization else " (no --quantization)")
    else:
        runs_words = "weights in a format not known here (its command line is not visible)"
    split = len(running.gpu_indices)
    if split and split != settings.tp:
        differ.append("split")
    card = plan.card
    if card and settings.gpu.key != card:
        differ.append("GPU")
    plan_side = (
        f"{plan.model}, weights {planned_format}, KV cache {settings.kv_cache_dtype}, on {settings.tp} x "
        f"{settings.gpu.key}"
    )
    where = f"on {split} x {card or 'GPU'} ({gpu_listing(running.gpu_indices)})" if split else "on GPUs not known"
    engine_side = f"{running.model or 'a model it does not name'}, {runs_words}, {where}"
    return plan_side, engine_side, differ


def _listed(words: list[str]) -> str:
    """`model`, `model and split`, `model, weight format and split`."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _weights_format(quantization: str | None, spec: ModelSpec) -> str:
    """What the weights load as: the quantization asked for, else the checkpoint's own format."""
    return (quantization or spec.checkpoint_format or spec.native_dtype or "bf16").lower()


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
    kv = (record.kv_pool_tokens or 0) * (kv_bytes_per_token(measured_facts(plan)) or 0)
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
        title=f"{plan_name(s, plan)}: weights take about {ratio:.1f}x the plan on GPU {gpu}",
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
        findings.append(_short(s, plan, planned, measured))
    return findings


def _short(s: Situation, plan: EnginePlan, planned: int, measured: int) -> Finding:
    length = plan.prediction.max_model_len
    short = planned - measured
    return Finding(
        severity="critical" if measured < planned / 2 else "warning",
        code="kv_pool_short",
        title=f"{plan_name(s, plan)}: KV pool {short:,} tokens smaller than planned",
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
                    title=f"{plan_name(s, plan)}: the {plan.label} plan {verdict}",
                    explanation=line,
                    try_this="see `gpumem-tui plan` for the whole sizing",
                    endpoint=plan.endpoint,
                )
            )
    return findings
