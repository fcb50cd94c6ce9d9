"""Findings about an engine of the fleet against the plan made for it from the catalog (plans.py), with
the single-node code's arithmetic and thresholds (findings/plan.py): `kv_pool_short` (the pool vLLM carved,
from `vllm:cache_config_info`, against the plan's), `weights_mismatch` (what dcgm-exporter's FB_USED per GPU
leaves for weights, where the engine holds its whole node), and `plan_note` for each line the planner says the
plan does not fit or warns about, worded as the node's (`notes_of`). An engine whose plan came from its node's
exporter is judged there, not here; an engine whose target is down is not judged (its last values linger), nor
one asleep (`vllm:engine_sleep_state`: it freed its weights or KV cache on purpose), which is said as a
`plan_note`."""

from __future__ import annotations

from gpumem_tui.diagnosis.findings.plan import (
    Named,
    check_flags,
    note_severity,
    notes_of,
    pool_short,
    pool_short_severity,
    weights_estimate,
    weights_severity,
    weights_title,
)
from gpumem_tui.diagnosis.findings.records import Finding, Thresholds
from gpumem_tui.diagnosis.findings.situation import engine_named
from gpumem_tui.diagnosis.findings.words import engine_short, gpus
from gpumem_tui.diagnosis.fleet.records import endpoint
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetNode, FleetPlan, FleetSample
from gpumem_tui.text import literal
from gpumem_tui.units import gib


def plan_findings(sample: FleetSample, t: Thresholds) -> list[tuple[str | None, Finding]]:
    """(node, finding) for each engine planned here that answers now, on a node that does not judge itself
    (`gpumem-tui export`'s findings are read there), worded as the node's (findings/plan.py); each names the
    engine's GPUs as the pod-to-GPU join read them, so the overview and the full read say the same."""
    down = {(labels.get("job", ""), labels.get("instance", "")) for labels in sample.targets_down}
    exporting = {f.node for f in sample.node_findings}
    nodes = {n.name: n for n in sample.nodes}
    found: list[tuple[str | None, Finding]] = []
    for e in sample.engines:
        plan = e.plan
        if plan is None or e.plan_from != "catalog" or (e.job or "", e.instance or "") in down or e.node in exporting:
            continue
        if e.sleep_state is not None:
            found.append((e.node, _asleep(e)))
            continue
        indices = sorted(set(e.gpu_indices))
        name = Named(
            engine_short(endpoint(e), plan.model), gpus(indices), f" {engine_named(endpoint(e), plan.model, indices)}"
        )
        notes = notes_of(name, "auto", plan.failures, plan.warnings, endpoint(e), e.pool_tokens)
        found += [(e.node, note) for note in notes]
        if e.pool_tokens is None or plan.kv_cache_tokens <= 0:  # nothing measured, or no pool to hold it against
            continue
        severity = pool_short_severity(plan.kv_cache_tokens, e.pool_tokens, t)
        if severity is not None:
            length, planned, measured = plan.max_model_len, plan.kv_cache_tokens, e.pool_tokens
            short = pool_short(name, "auto", length, planned, measured, severity, _first(e), endpoint(e), e.kind)
            found.append((e.node, short))
        weights = _weights(e, name, plan, nodes.get(e.node or ""), t)
        if weights is not None:
            found.append((e.node, weights))
    return found


def _first(e: FleetEngine) -> int | None:
    """The engine's first GPU, as the node names a plan finding's GPU."""
    return min(e.gpu_indices, default=None)


def _weights(e: FleetEngine, name: Named, plan: FleetPlan, node: FleetNode | None, t: Thresholds) -> Finding | None:
    """Judged where the engine holds every GPU of its node: the node's FB_USED per GPU is then the engine's
    share (read summed per node in both the full read and the overview)."""
    count = e.gpu_count or 0
    if node is None or node.used_bytes is None or not count or count != node.gpus or not plan.weights_bytes:
        return None
    held = node.used_bytes // count
    kv = (e.pool_tokens or 0) * plan.kv_bytes_per_token
    estimate = weights_estimate(held, kv, plan.overhead_bytes, plan.weights_bytes, plan.activation_peak_bytes)
    ratio = estimate / plan.weights_bytes
    severity = weights_severity(ratio, t)
    if severity is None:
        return None
    return Finding(
        severity=severity,
        code="weights_mismatch",
        # FB_USED per GPU of the whole node: each of its GPUs alike
        title=weights_title(
            name.name, name.where, ratio, f"about {gib(estimate)} a GPU, {gib(plan.weights_bytes)} planned"
        ),
        explanation=f"dcgm-exporter's FB_USED on node {literal(node.name)} is {gib(held)} per GPU over its "
        f"{count} GPU(s), all the engine's (everything on them counts, not only the engine); less its KV pool "
        f"({e.pool_tokens:,} tokens = {gib(kv)}) and about {gib(plan.overhead_bytes)} of context, non-torch "
        f"memory and CUDA graphs, that leaves about {gib(estimate)} of weights. The catalog's plan "
        f"({plan.model}, the checkpoint's own format: vLLM's metrics do not name it) says "
        f"{gib(plan.weights_bytes)}."
        + (" Twice (or half) the planned weights is the sign of another precision." if severity == "critical" else "")
        + (" More than planned may also be another process on its GPUs." if ratio > 1 else "")
        + name.engine,
        try_this=check_flags("the checkpoint's own format (vLLM's metrics do not name the one it loads)"),
        endpoint=endpoint(e),
    )


def _asleep(e: FleetEngine) -> Finding:
    return Finding(
        severity=note_severity(manual=False),  # a plan made here from the catalog
        code="plan_note",
        title=f"{literal(e.name)}: asleep ({literal(e.sleep_state)}), not held against its plan",
        explanation="vLLM's sleep mode frees the engine's weights or KV cache on purpose "
        "(vllm:engine_sleep_state): its GPU memory, pool and KV usage say nothing of the plan until it wakes.",
        try_this="nothing, unless it should be serving: wake it (POST /wake_up)",
        endpoint=endpoint(e),
    )
