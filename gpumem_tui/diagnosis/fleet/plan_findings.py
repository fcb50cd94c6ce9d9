"""Findings about an engine of the fleet against the plan made for it from the catalog (plans.py), with
the single-node code's arithmetic and thresholds (findings/plan.py): `kv_pool_short` (the pool vLLM carved,
from `vllm:cache_config_info`, against the plan's), `weights_mismatch` (what dcgm-exporter's FB_USED per GPU
leaves for weights, where the engine holds its whole node), and `plan_note` for each line the planner says the
plan does not fit or warns about, worded as the node's (`notes_of`). An engine whose plan came from its node's
exporter is judged there, not here; an engine whose target is down is not judged (its last values linger), nor
one asleep (`vllm:engine_sleep_state`: it freed its weights or KV cache on purpose), which is said as a
`plan_note`."""

from __future__ import annotations

import operator

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
from gpumem_tui.diagnosis.fleet.kept import held
from gpumem_tui.diagnosis.fleet.records import endpoint
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetNode, FleetPlan, FleetSample
from gpumem_tui.text import literal
from gpumem_tui.units import gib

Said = list[tuple[str | None, Finding]]
Words = dict[int, tuple[FleetEngine, tuple[object, ...], Said]]
Kept = tuple[Words, Thresholds | None]


class _Said:
    """Each engine's last findings, by the very record they were made of (its id, the record held) with its
    node's figures and the thresholds: the fleet screen judges 10^4 planned engines every 15 s, and an engine
    whose record the reader and the planner kept (plans.py) is worded once. The last two judges' (the fleet's
    sample and a node's beside it), each replaced whole (two threads may judge at once: each finds its own or
    makes it)."""

    def __init__(self) -> None:
        self.last: Kept = ({}, None)
        self.before: Kept = ({}, None)
        self.whole: tuple[tuple[object, ...], list[FleetNode], Said] | None = None
        """The last judge's findings whole, with the engines list, thresholds and targets that made them and the
        nodes: where a sample's are the very ones (the nodes the very records), its findings are these."""

    def clear(self) -> None:
        self.last, self.before, self.whole = ({}, None), ({}, None), None

    def kept(self, sample: FleetSample, facts: tuple[object, ...]) -> Said | None:
        """The last findings where `facts` (the engines list, the thresholds and targets) and the nodes are
        those they were made of."""
        whole = self.whole
        if whole is None or len(whole[1]) != len(sample.nodes) or whole[0][0] is not facts[0]:
            return None
        if whole[0][1:] != facts[1:] or not all(map(operator.is_, whole[1], sample.nodes)):
            return None
        return list(whole[2])

    def of(self, t: Thresholds) -> tuple[Words, Words]:
        """The last two judges' words where they were made by thresholds that read as `t` (else none)."""
        (last, last_t), (before, before_t) = self.last, self.before
        return (last if last_t == t else {}), (before if before_t == t else {})


SAID = held(_Said())


def plan_findings(sample: FleetSample, t: Thresholds) -> Said:
    """(node, finding) for each engine planned here that answers now, on a node that does not judge itself
    (`gpumem-tui export`'s findings are read there), worded as the node's (findings/plan.py); each names the
    engine's GPUs as the pod-to-GPU join read them, so the overview and the full read say the same."""
    down = {(labels.get("job", ""), labels.get("instance", "")) for labels in sample.targets_down}
    exporting = {f.node for f in sample.node_findings}
    whole = (sample.engines, t, down, exporting)
    same = SAID.kept(sample, whole)
    if same is not None:
        return same
    nodes = {n.name: n for n in sample.nodes}
    found: Said = []
    now: Words = {}
    last, before = SAID.of(t)
    for e in sample.engines:
        plan = e.plan
        if plan is None or e.plan_from != "catalog" or (e.job or "", e.instance or "") in down or e.node in exporting:
            continue
        node = nodes.get(e.node or "")
        facts: tuple[object, ...] = (None,) if node is None else (node.name, node.used_bytes, node.gpus)
        was = last.get(id(e)) or before.get(id(e))
        said = was[2] if was is not None and was[0] is e and was[1] == facts else _said(e, plan, node, t)
        now[id(e)] = (e, facts, said)
        found += said
    SAID.before, SAID.last = SAID.last, (now, t)
    SAID.whole = (whole, sample.nodes, list(found))
    return found


def _said(e: FleetEngine, plan: FleetPlan, node: FleetNode | None, t: Thresholds) -> Said:
    """What plan_findings says of one engine."""
    if e.sleep_state is not None:
        return [(e.node, _asleep(e))]
    indices = sorted(set(e.gpu_indices))
    name = Named(
        engine_short(endpoint(e), plan.model), gpus(indices), f" {engine_named(endpoint(e), plan.model, indices)}"
    )
    notes = notes_of(name, "auto", plan.failures, plan.warnings, endpoint(e), e.pool_tokens)
    found: Said = [(e.node, note) for note in notes]
    if e.pool_tokens is None or plan.kv_cache_tokens <= 0:  # nothing measured, or no pool to hold it against
        return found
    severity = pool_short_severity(plan.kv_cache_tokens, e.pool_tokens, t)
    if severity is not None:
        length, planned, measured = plan.max_model_len, plan.kv_cache_tokens, e.pool_tokens
        short = pool_short(name, "auto", length, planned, measured, severity, _first(e), endpoint(e), e.kind)
        found.append((e.node, short))
    weights = _weights(e, name, plan, node, t)
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
