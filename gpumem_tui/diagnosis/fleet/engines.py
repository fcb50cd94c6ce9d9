"""Findings about the fleet's engines: `kv_saturated` (vLLM's gauges) and `engine_down` (a vLLM target's `up`
is 0), decided and worded by the node's rules (as_node.py); `not_joined` (an engine whose GPUs could not be
found) and `config_drift` (one model served with different cache settings), the fleet's own."""

from __future__ import annotations

from collections import defaultdict

from gpumem_tui.diagnosis.findings.engines import kv_saturated as node_kv_saturated
from gpumem_tui.diagnosis.findings.engines import saturated
from gpumem_tui.diagnosis.findings.records import Finding, Thresholds
from gpumem_tui.diagnosis.findings.starting import engine_down as node_engine_down
from gpumem_tui.diagnosis.fleet.as_node import engine_sample, judged
from gpumem_tui.diagnosis.fleet.kept import kept
from gpumem_tui.diagnosis.fleet.records import FleetFinding, endpoint
from gpumem_tui.engine_records import EndpointStatus
from gpumem_tui.models import Sample
from gpumem_tui.sources.prometheus.labels import host_of
from gpumem_tui.sources.prometheus.node_sample import SOURCE, TARGET_DOWN
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetSample
from gpumem_tui.text import literal


def kv_saturated(sample: FleetSample, t: Thresholds) -> list[FleetFinding]:
    """Engines the node's rule (`saturated`) calls saturated, worded by the node's rule; not one asleep (its
    KV cache is freed on purpose: plan_findings.py says so)."""
    findings = []
    for e in sample.engines:
        if e.sleep_state is not None or not saturated(
            e.kv_usage_fraction, e.preemptions_per_min, e.requests_waiting, t
        ):
            continue
        said = judged(node_kv_saturated, engine_sample(e, sample), t)
        findings += [FleetFinding(node=e.node, finding=f) for f in said]
    return findings


def engine_down(sample: FleetSample, t: Thresholds) -> list[FleetFinding]:
    """vLLM targets whose `up` is 0, decided and worded by the node's rule: Prometheus names no process of a
    target, so the rule finds none alive (critical: gone, as far as the fleet can tell)."""
    if not sample.targets_down:
        return []
    engines: dict[tuple[str | None, str | None], FleetEngine] = {
        (e.job, e.instance): e for e in sample.engines if e.job
    }
    by_pod = {f"{e.namespace or ''}/{e.pod}": e.node for e in sample.engines if e.pod}
    findings = []
    for labels in sample.targets_down:
        pod = f"{labels.get('namespace', '')}/{labels['pod']}" if labels.get("pod") else None
        node = (by_pod.get(pod) or sample.pod_nodes.get(pod)) if pod else host_of(labels.get("instance", ""))
        engine = engines.get((labels.get("job"), labels.get("instance")))
        if engine is not None:
            down = engine_sample(engine, sample)
        else:  # a target that never gave a vLLM series: known by its pod or address alone
            target = EndpointStatus(url=pod or labels.get("instance", "?"), state="down", error=TARGET_DOWN)
            down = Sample(timestamp=sample.evaluated_at, hostname=node or "?", source=SOURCE, engines=[target])
        findings += [FleetFinding(node=node, finding=f) for f in judged(node_engine_down, down, t)]
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
    return list(_drift(sample.engines))


@kept
def _drift(engines: list[FleetEngine]) -> tuple[FleetFinding, ...]:
    """The models served with different cache settings (what `name` is made of counts too: it is in the words)."""
    by_model: dict[str, list[FleetEngine]] = defaultdict(list)
    for engine in engines:
        if engine.settings:
            by_model[engine.model_name].append(engine)
    findings = []
    for model, served in sorted(by_model.items()):
        keys = sorted({k for e in served for k in e.settings})
        differ = [k for k in keys if len({e.settings.get(k) for e in served}) > 1]
        if not differ:
            continue
        parts = []
        for key in differ:
            counts: dict[str, int] = defaultdict(int)
            for e in served:
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
                    + ", ".join(literal(e.name) for e in served)
                    + ". Replicas of one model that differ hold different KV pools and fill at different loads.",
                    try_this="deploy every replica of the model from one configuration",
                )
            )
        )
    return tuple(findings)
