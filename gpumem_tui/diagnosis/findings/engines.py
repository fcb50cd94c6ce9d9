"""Findings about engines that answer: values that cannot be true, a full KV cache, a context the pool
cannot hold."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import EnginePlan, planned
from gpumem_tui.diagnosis.engine_values import implausible, plausible
from gpumem_tui.diagnosis.findings.plan import plan_engine, plan_name, plan_where, serving
from gpumem_tui.diagnosis.findings.records import Finding, Thresholds
from gpumem_tui.diagnosis.findings.situation import Situation, percent
from gpumem_tui.diagnosis.findings.words import amount, compose
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.sources.engines.advice import Advice
from gpumem_tui.sources.engines.registry import advice


def engine_value_implausible(s: Situation) -> list[Finding]:
    """One finding per endpoint whose records hold values that cannot be true (`engine_values`): they are
    named, left out of the plan and of every measurement, and the other findings stand."""
    findings = []
    for endpoint in s.sample.engines:
        bad = [(record, value) for record in endpoint.records for value in implausible(record)]
        if not bad:
            continue
        record, first = bad[0]
        listed = "; ".join(str(value) for _, value in bad)
        findings.append(
            Finding(
                severity="warning",
                code="engine_value_implausible",
                title=s.engine_title("engine value that cannot be true", endpoint.url, str(first), record.model),
                explanation=f"{listed[0].upper()}{listed[1:]}. No plan is made from a value that cannot be true, and "
                f"none is judged as a measurement; the other findings stand. "
                f"{s.engine_named(endpoint.url, record.model)}",
                try_this="look at what the endpoint serves (`gpumem-tui metrics URL`): an exporter or proxy in "
                "between may rescale or relabel it; pass the engine's settings by hand with --model and its options",
                endpoint=endpoint.url,
            )
        )
    return findings


def kv_saturated(s: Situation) -> list[Finding]:
    findings = []
    for endpoint in s.sample.engines:
        if endpoint.state != "ok":
            continue
        for record in map(plausible, endpoint.records):
            if saturated(record.kv_usage_fraction, record.preemptions_per_min, record.requests_waiting, s.thresholds):
                findings.append(_saturation(s, endpoint, record))
    return findings


def saturated(usage: float | None, preemptions_per_min: float | None, waiting: float | None, t: Thresholds) -> bool:
    """The one rule of `kv_saturated`, the node's and the fleet's: KV usage at or over the fraction while
    requests are preempted or wait."""
    pressed = (preemptions_per_min or 0) > 0 or (waiting or 0) > 0
    return usage is not None and usage >= t.kv_saturated_fraction and pressed


def _saturation(s: Situation, endpoint: EndpointStatus, record: EngineRecord) -> Finding:
    plan = s.plan_for(endpoint.url)
    pool, running, usage = record.kv_pool_tokens, record.requests_running or 0, record.kv_usage_fraction
    assert usage is not None  # saturated only with a usage reading
    per_request = round(usage * pool / running) if pool and running else None
    numbers = f"KV cache {percent(usage)} full"
    numbers += f" ({pool:,} tokens)" if pool else ""
    numbers += f"; {running:,} running, {record.requests_waiting or 0:,} waiting"
    if record.preemptions_per_min is not None:
        numbers += f", {record.preemptions_per_min:,.1f} preemptions/min"
    if per_request:
        numbers += f"; a running request holds about {per_request:,} tokens"
    options = s.more_conversations(plan, pool, per_request) if plan and pool else []
    flags = advice(record.engine)
    return Finding(
        severity="warning",
        code="kv_saturated",
        title=s.engine_title("KV cache full", endpoint.url, _pressed(record), record.model),
        explanation=numbers
        + "."
        + ("" if not options else " " + " ".join(options))
        + f" {s.engine_named(endpoint.url, record.model)}",
        try_this=f"add capacity (another GPU or replica), FP8 KV cache ({flags.kv_fp8}), or cap {flags.requests} "
        "so requests wait instead of being preempted",
        endpoint=endpoint.url,
    )


def _pressed(record: EngineRecord) -> str:
    """`56 waiting, 120 preemptions/min`: what a full KV cache does to requests now (what is zero left out)."""
    said = [f"{amount(record.requests_waiting)} waiting"] if record.requests_waiting else []
    if record.preemptions_per_min:
        said.append(f"{amount(record.preemptions_per_min)} preemptions/min")
    return ", ".join(said) or "requests queue or are preempted"


def context_too_long(s: Situation) -> list[Finding]:
    findings = []
    for plan in s.plans:
        p = planned(plan)
        if p is None or plan.users < 1:
            continue
        live = serving(s, plan)
        measured = live[1].kv_pool_tokens if live else None
        pool = measured if measured is not None else p.pool_tokens
        length = p.context_len
        if plan.users * length > pool:
            flags = advice(live[1].engine if live else None)
            findings.append(_too_long(s, plan, pool, length, measured is not None, flags))
    return findings


def _too_long(s: Situation, plan: EnginePlan, pool: int, length: int, measured: bool, flags: Advice) -> Finding:
    need = plan.users * length
    fits = pool / length
    shorter = pool // plan.users
    assumed = plan.context_assumed and plan.label == "auto"
    return Finding(
        # a length nobody stated is the model's maximum by default: worth saying, never an alarm
        severity="info" if assumed else "critical" if pool < length else "warning",
        code="context_too_long",
        title=compose(
            "context longer than the KV pool holds",
            plan_where(s, plan),
            f"{plan.users:,} conversation(s) at {length:,} tokens, the pool holds {pool:,}"
            + (" (if it serves its model's full context)" if assumed else ""),
            plan_name(plan),
        ),
        explanation=f"{plan.users:,} x {length:,} tokens = {need:,} tokens; the {'engine' if measured else 'planned'} "
        f"pool holds {pool:,} tokens ({fits:,.1f} conversations at full length)."
        + (
            f" The engine's max length is not known here: {length:,} is its model's maximum, assumed."
            if assumed
            else ""
        )
        + plan_engine(s, plan),
        try_this=f"lower {flags.context} to {shorter:,} or plan for {int(fits):,} users; FP8 KV cache or more "
        "GPUs grow the pool",
        gpu_index=plan.gpu_indices[0] if plan.gpu_indices else None,
        endpoint=plan.endpoint,
    )
