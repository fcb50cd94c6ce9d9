"""Findings about the fleet's engines: `kv_saturated` (vLLM's gauges), `engine_down` (a vLLM target's `up`
is 0), `not_joined` (an engine whose GPUs could not be found) and `config_drift` (one model served with
different cache settings)."""

from __future__ import annotations

from collections import defaultdict

from gpumem_tui.diagnosis.findings.engines import saturated
from gpumem_tui.diagnosis.findings.records import Finding, Thresholds
from gpumem_tui.diagnosis.findings.situation import percent
from gpumem_tui.diagnosis.findings.starting import down_severity
from gpumem_tui.diagnosis.fleet.records import FleetFinding, endpoint
from gpumem_tui.sources.prometheus.labels import host_of
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetSample
from gpumem_tui.text import literal


def kv_saturated(sample: FleetSample, t: Thresholds) -> list[FleetFinding]:
    findings = []
    for e in sample.engines:
        usage = e.kv_usage_fraction
        if e.sleep_state is not None:  # asleep: its KV cache is freed on purpose (plan_findings.py says so)
            continue
        if usage is None or not saturated(usage, e.preemptions_per_min, e.requests_waiting, t):
            continue
        pool = f"{e.pool_tokens:,} tokens" if e.pool_tokens is not None else "a pool of unknown size"
        findings.append(
            FleetFinding(
                node=e.node,
                finding=Finding(
                    severity="warning",
                    code="kv_saturated",
                    title=f"{literal(e.name)}: KV cache full, requests queue",
                    explanation=f"KV usage {percent(usage)} of {pool}; {e.requests_waiting or 0:g} requests "
                    f"waiting, {e.requests_running or 0:g} running, "
                    + (
                        f"{e.preemptions_per_min:.1f} preemptions/min."
                        if e.preemptions_per_min is not None
                        else "preemptions unknown."
                    ),
                    try_this="add a replica or a GPU (tensor parallel), or an FP8 KV cache (--kv-cache-dtype fp8)",
                    endpoint=endpoint(e),
                ),
            )
        )
    return findings


def engine_down(sample: FleetSample) -> list[FleetFinding]:
    by_pod = {f"{e.namespace or ''}/{e.pod}": e.node for e in sample.engines if e.pod}
    findings = []
    for labels in sample.targets_down:
        pod = f"{labels.get('namespace', '')}/{labels['pod']}" if labels.get("pod") else None
        node = (by_pod.get(pod) or sample.pod_nodes.get(pod)) if pod else host_of(labels.get("instance", ""))
        target = pod or labels.get("instance", "?")
        findings.append(
            FleetFinding(
                node=node,
                finding=Finding(
                    severity=down_severity(alive=False),  # Prometheus names no process of a target
                    code="engine_down",
                    title=f"vLLM target {literal(target)} does not answer (up == 0, job {literal(labels.get('job'))})",
                    explanation="Prometheus's last scrape of this target failed; its KV and queue series are stale "
                    "or gone.",
                    try_this="read the engine's log (an out-of-memory error, a lost GPU); `check --replay` on a "
                    "recording of the node says who grew before it",
                    endpoint=target,
                ),
            )
        )
    return findings


def not_joined(sample: FleetSample) -> list[FleetFinding]:
    return [
        FleetFinding(
            node=e.node,
            finding=Finding(
                severity="info",
                code="not_joined",
                title=f"{literal(e.name)}: not joined to its GPUs",
                explanation=f"{literal(e.join_reason)}. Its memory is not judged; its KV and queue are.",
                try_this="run dcgm-exporter in Kubernetes mode (the Helm chart's default), or give the vLLM scrape "
                "job a node label",
                endpoint=endpoint(e),
            ),
        )
        for e in sample.engines
        if e.joined == "not joined"
    ]


def config_drift(sample: FleetSample) -> list[FleetFinding]:
    by_model: dict[str, list[FleetEngine]] = defaultdict(list)
    for engine in sample.engines:
        if engine.settings:
            by_model[engine.model_name].append(engine)
    findings = []
    for model, engines in sorted(by_model.items()):
        keys = sorted({k for e in engines for k in e.settings})
        differ = [k for k in keys if len({e.settings.get(k) for e in engines}) > 1]
        if not differ:
            continue
        parts = []
        for key in differ:
            counts: dict[str, int] = defaultdict(int)
            for e in engines:
                counts[e.settings.get(key, "absent")] += 1
            parts.append(
                f"{key} " + " vs ".join(f"{literal(v)} ({n} engine{'s' * (n > 1)})" for v, n in counts.items())
            )
        findings.append(
            FleetFinding(
                finding=Finding(
                    severity="warning",
                    code="config_drift",
                    title=f"{literal(model)} is served with different cache settings: {', '.join(differ)}",
                    explanation="; ".join(parts)
                    + ". Engines: "
                    + ", ".join(literal(e.name) for e in engines)
                    + ". Replicas of one model that differ hold different KV pools and fill at different loads.",
                    try_this="deploy every replica of the model from one configuration",
                )
            )
        )
    return findings
