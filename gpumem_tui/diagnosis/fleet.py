"""Findings about a fleet read from Prometheus, as the app's own Finding records, each with its node.

Per node, what Prometheus lets us judge: `headroom_low` (dcgm-exporter's free memory against the card,
"as planned" when vLLM's gpu_memory_utilization leaves that much on purpose), `kv_saturated` (vLLM's gauges),
`engine_down` (a vLLM target's `up` is 0), and against the plan made from the catalog (fleet_plan_findings.py)
`kv_pool_short`, `weights_mismatch`, `plan_note`. Fleet-only: `source_stale` (a node stopped reporting, a query
failed, the server answered in part), `not_joined` (an engine whose GPUs could not be found), `config_drift`
(one model served with different cache settings). A field Prometheus did not give raises nothing: it is
shown as unknown with its reason, never judged as fine. A node whose `gpumem-tui export` publishes judges
itself, with its plans: its findings replace the fleet's single-node ones about it (FLEET_ONLY aside)."""

from __future__ import annotations

from collections import defaultdict

from gpumem_tui.diagnosis.findings.records import SEVERITY_ORDER, Finding, Thresholds
from gpumem_tui.diagnosis.findings.registry import BY_CODE
from gpumem_tui.diagnosis.fleet_plan_findings import plan_findings
from gpumem_tui.records import Record
from gpumem_tui.sources.prometheus.fleet import STALE_AFTER_S
from gpumem_tui.sources.prometheus.headroom import Headroom, as_planned_gpu, as_planned_node, node_shares, shares
from gpumem_tui.sources.prometheus.labels import host_of
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetGpu, FleetSample
from gpumem_tui.text import literal
from gpumem_tui.units import gib

FLEET_ONLY = frozenset({"source_stale", "not_joined", "config_drift"})
"""Codes only the fleet judges; every other one a node's own `gpumem-tui export` judges too."""


class FleetFinding(Record):
    """A finding and the node it is about (None: the fleet or the source as a whole)."""

    node: str | None = None
    finding: Finding


def nothing_read(sample: FleetSample) -> str | None:
    """Why the sample holds nothing to judge (no node and no engine within the hour: a --selector that matches
    nothing, a moment with no data), in words; None where it holds something. `fleet check` is then UNKNOWN and
    the screen says so: a source that answers is not a fleet that is ok."""
    if sample.nodes or sample.engines:
        return None
    return f"no node and no engine within the hour ({sample.unknown.get('memory', 'no series')})"


def judge_fleet(sample: FleetSample, thresholds: Thresholds | None = None) -> list[FleetFinding]:
    """Every finding of the sample, the most severe first, then by node."""
    t = thresholds or Thresholds()
    found = [
        *_source_stale(sample),
        *_engine_down(sample),
        *_headroom_low(sample, t),
        *_kv_saturated(sample, t),
        *_not_joined(sample),
        *_config_drift(sample),
        *(FleetFinding(node=node, finding=f) for node, f in plan_findings(sample, t)),
    ]
    from_nodes = _from_node_exporters(sample)
    # a node that judges itself knows better (its plan): its finding replaces the fleet's of the same code, and
    # while its exporter publishes, the node's findings are its whole answer to what the node's check judges
    said = {(f.node, f.finding.code, f.finding.gpu_index) for f in from_nodes}
    judging = {node for node, age in sample.exporter_nodes.items() if age <= STALE_AFTER_S}
    found = [
        f
        for f in found
        if (f.node, f.finding.code, f.finding.gpu_index) not in said
        and (f.node not in judging or f.finding.code in FLEET_ONLY)
    ] + from_nodes
    return sorted(found, key=lambda f: (-SEVERITY_ORDER[f.finding.severity], f.node or "", f.finding.code))


def _from_node_exporters(sample: FleetSample) -> list[FleetFinding]:
    """`gpumem_finding_active` of nodes that run `gpumem-tui export`, as findings; a code or severity this
    version does not know is left out (it would not be judged the same)."""
    findings = []
    for f in sample.node_findings:
        kind = BY_CODE.get(f.code)
        if kind is None or f.severity not in kind.severities:
            continue
        gpu = f"GPU {literal(f.gpu)}: " if f.gpu else ""
        engine = f" ({literal(f.endpoint)})" if f.endpoint else ""
        findings.append(
            FleetFinding(
                node=f.node,
                finding=Finding(
                    severity=f.severity,  # checked against the registry above
                    code=kind.code,
                    title=f"node {literal(f.node)} {gpu}{kind.meaning}{engine}",
                    explanation="Raised by gpumem-tui export on the node, judged against the engine's plan"
                    + (f" (pid {literal(f.pid)}). " if f.pid else ". ")
                    + "The node's own check has the numbers.",
                    try_this="run `gpumem-tui check -v` on the node, or open its TUI",
                    gpu_index=int(f.gpu) if f.gpu and f.gpu.isdigit() else None,
                    pid=int(f.pid) if f.pid and f.pid.isdigit() else None,
                    endpoint=f.endpoint,
                ),
            )
        )
    return findings


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.1f} %"


def _source_stale(sample: FleetSample) -> list[FleetFinding]:
    findings = []
    # a node only its gpumem-tui export reported, stopped past the lookback, has no figures: it was the exporter's
    ours = "gpumem-tui export"
    whose = {
        n.name: n.memory_from or (ours if n.name in sample.exporter_nodes else "dcgm-exporter") for n in sample.nodes
    }
    for node, age in sorted(sample.stale_nodes.items()):
        how_old = f"{age:.0f} s old" if age is not None else "older than 5 min (Prometheus's lookback)"
        exporter = whose.get(node, "dcgm-exporter")
        findings.append(
            FleetFinding(
                node=node,
                finding=Finding(
                    severity="warning",
                    code="source_stale",
                    title=f"node {literal(node)}: its newest {exporter} sample is {how_old}",
                    explanation=f"Data older than {STALE_AFTER_S:.0f} s (twice dcgm-exporter's 30 s collection "
                    "interval) says nothing of the node now: its memory is not judged.",
                    try_this=f"check that {exporter} runs on the node and that Prometheus scrapes it "
                    "(`up{job=...}` of its target)",
                ),
            )
        )
    if sample.error:
        findings.append(_whole_source("some queries failed, their fields are unknown", sample.error))
    for warning in sample.warnings:
        if "NODE_NAME" not in warning:
            findings.append(_whole_source("the server answered in part", warning))
    return findings


def _whole_source(title: str, words: str) -> FleetFinding:
    return FleetFinding(
        finding=Finding(
            severity="warning",
            code="source_stale",
            title=f"Prometheus: {title}",
            explanation=f"The server said: {literal(words)}.",
            try_this="look at the server's health (a Thanos store or Mimir querier that is down answers in part)",
        )
    )


def _gpu_index(gpu: FleetGpu) -> int | None:
    return int(gpu.index) if gpu.index is not None and gpu.index.isdigit() else None


def _headroom_low(sample: FleetSample, t: Thresholds) -> list[FleetFinding]:
    """Per GPU read one by one: a warning or critical finding each; GPUs under the fraction as their
    engines planned are counted per node (one info finding), as are those the overview counted on the
    server (`FleetNode.low`): both reads say the same of a node."""
    h = Headroom(t.headroom_warning_fraction, t.headroom_critical_fraction, t.headroom_plan_tolerance_fraction)
    share = shares(sample.engines)
    planned: dict[str, list[tuple[int, int]]] = defaultdict(list)
    findings = []
    for gpu in sample.gpus:
        free, total = gpu.free_bytes, gpu.total_bytes
        if gpu.node in sample.stale_nodes or free is None or not total:
            continue
        if free >= h.warning * total:
            continue
        given = share.get(gpu.uuid or gpu.index or "?")
        if as_planned_gpu(free, total, given, h):
            planned[gpu.node].append((free, total))
            continue
        critical = free < h.critical * total
        words = f"{gib(free)} free of {gib(total)} ({_percent(free / total)} of the card)"
        if given is not None:
            words += f"; vLLM's gpu_memory_utilization {given:g} leaves {gib(total * (1 - given))}"
        where = f"GPU {literal(gpu.index)}" + (f" ({literal(gpu.uuid)})" if gpu.uuid else "")
        findings.append(
            FleetFinding(
                node=gpu.node,
                finding=Finding(
                    severity="critical" if critical else "warning",
                    code="headroom_low",
                    title=f"node {literal(gpu.node)} {where}: only {_percent(free / total)} of memory free",
                    explanation=words + ".",
                    try_this="open the node (`gpumem-tui` on it) to see who holds the memory; lower "
                    "--gpu-memory-utilization or move other work off this GPU",
                    gpu_index=_gpu_index(gpu),
                ),
            )
        )
    per_node = node_shares(sample.engines)
    for node in sample.nodes:
        if node.name in sample.stale_nodes:
            continue
        mine = per_node.get(node.name, {})
        if node.low is not None and node.name not in planned and as_planned_node(node, mine, h):
            least = (node.low.least_free_bytes, node.low.least_free_total_bytes)
            planned[node.name] = [least] * node.low.gpus
        if planned.get(node.name):
            findings.append(_as_planned(node.name, planned[node.name], mine, h))
    return findings


def _as_planned(node: str, gpus: list[tuple[int, int]], mine: dict[str, float], h: Headroom) -> FleetFinding:
    """One info finding for a node's GPUs under the fraction as planned: how many, and the least free;
    `mine`: the utilization its engines give each of its GPUs."""
    free, total = min(gpus, key=lambda g: g[0] / g[1])
    shares_said = sorted(set(mine.values()))
    count = f"{len(gpus)} GPU{'s' * (len(gpus) > 1)}"
    return FleetFinding(
        node=node,
        finding=Finding(
            severity="info",
            code="headroom_low",
            title=f"node {literal(node)}: {count} under {_percent(h.warning)} free, as planned "
            f"(the least: {_percent(free / total)})",
            explanation=f"The least free has {gib(free)} of {gib(total)} ({_percent(free / total)} of the card); "
            f"its engines' gpu_memory_utilization ({', '.join(f'{s:g}' for s in shares_said)}) leaves that much "
            "on purpose.",
            try_this="nothing: the engines' gpu_memory_utilization leaves this much on purpose",
        ),
    )


def _endpoint(engine: FleetEngine) -> str:
    return f"{engine.namespace}/{engine.pod}" if engine.pod else engine.instance or "?"


def _kv_saturated(sample: FleetSample, t: Thresholds) -> list[FleetFinding]:
    findings = []
    for e in sample.engines:
        usage = e.kv_usage_fraction
        if e.sleep_state is not None:  # asleep: its KV cache is freed on purpose (fleet_plan_findings says so)
            continue
        pressed = (e.preemptions_per_min or 0) > 0 or (e.requests_waiting or 0) > 0
        if usage is None or usage < t.kv_saturated_fraction or not pressed:
            continue
        pool = f"{e.pool_tokens:,} tokens" if e.pool_tokens is not None else "a pool of unknown size"
        findings.append(
            FleetFinding(
                node=e.node,
                finding=Finding(
                    severity="warning",
                    code="kv_saturated",
                    title=f"{literal(e.name)}: KV cache full, requests queue",
                    explanation=f"KV usage {_percent(usage)} of {pool}; {e.requests_waiting or 0:g} requests "
                    f"waiting, {e.requests_running or 0:g} running, "
                    + (
                        f"{e.preemptions_per_min:.1f} preemptions/min."
                        if e.preemptions_per_min is not None
                        else "preemptions unknown."
                    ),
                    try_this="add a replica or a GPU (tensor parallel), or an FP8 KV cache (--kv-cache-dtype fp8)",
                    endpoint=_endpoint(e),
                ),
            )
        )
    return findings


def _engine_down(sample: FleetSample) -> list[FleetFinding]:
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
                    severity="critical",
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


def _not_joined(sample: FleetSample) -> list[FleetFinding]:
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
                endpoint=_endpoint(e),
            ),
        )
        for e in sample.engines
        if e.joined == "not joined"
    ]


def _config_drift(sample: FleetSample) -> list[FleetFinding]:
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
