"""Which workload a finding concerns, as the labels an alert routes on: the one place that chooses them, for the
exporter's finding series and the simulated fleet's alike (docs/export.md, "Routing labels").

A finding about an engine names that engine (`labels.ENGINE`). A finding about a GPU names the engine(s) on
that GPU by `model_name`, `engine`, `namespace` and `pod`, one label set per engine, never their `endpoint`
(the finding's own). A finding that names a pid names that process's pod as `process_namespace` and
`process_pod`. `kept` keeps them while the finding stays raised, so an engine restarting in a new pod
mid-incident does not change the alert's identity."""

from __future__ import annotations

from collections.abc import Mapping

from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.findings import Finding
from gpumem_tui.export.labels import engine_labels, split_pod
from gpumem_tui.models import Sample

Labels = Mapping[str, object]
Workloads = Mapping[tuple, tuple[Labels, ...]]
"""A finding's key (`Finding.key`) -> its label sets: one per engine on its GPU, at least one (maybe empty)."""
PROCESS = ("process_namespace", "process_pod")
"""The pod of the process a finding names: apart from `namespace`/`pod`, which are the engine's (the workload
the GPU is allocated to, as dcgm-exporter names it)."""


def plan_labels(sample: Sample, plan: EnginePlan) -> dict[str, object]:
    """The labels of the engine a plan is for, as its KV series carry them (the plan's model when the
    engine has not said which it serves); a plan made by hand for a node with no engine has no endpoint."""
    endpoint = next((e for e in sample.engines if e.url == plan.endpoint), None)
    record = endpoint.records[0] if endpoint and endpoint.records else None
    return engine_labels(sample, endpoint, record, plan.model)


def finding_workloads(
    sample: Sample | None, plans: list[EnginePlan], findings: list[Finding]
) -> dict[tuple, tuple[Labels, ...]]:
    """Each finding's label sets, chosen now (`kept` keeps them while the finding is raised)."""
    if sample is None:  # a failed refresh: no sample names anything
        return {f.key: ({"endpoint": f.endpoint},) for f in findings}
    by_endpoint = {p.endpoint: p for p in plans if p.endpoint is not None}
    holders = _holders(by_endpoint, findings)
    chosen: dict[tuple, tuple[Labels, ...]] = {}
    for finding in findings:
        process = _process_labels(sample, finding.pid)
        if finding.endpoint is not None:
            plan = by_endpoint.get(finding.endpoint)
            engine = plan_labels(sample, plan) if plan is not None else {"endpoint": finding.endpoint}
            chosen[finding.key] = ({**engine, **process},)
            continue
        engines = [_less_endpoint(plan_labels(sample, plan)) for plan in holders.get(finding.gpu_index, [])]
        unique = [labels for n, labels in enumerate(engines) if labels not in engines[:n]]
        chosen[finding.key] = tuple({**engine, **process} for engine in unique) or (process,)
    return chosen


def kept(
    sample: Sample | None, plans: list[EnginePlan], findings: list[Finding], before: Workloads
) -> dict[tuple, tuple[Labels, ...]]:
    """Each finding's label sets: those of the refresh before while it was raised then and they named a workload,
    else chosen now. So a finding's series (and its alert) keeps its identity while the engine it names
    restarts in a new pod or dies; a finding first raised before any engine was known takes one once."""
    now = finding_workloads(sample, plans, findings)
    for key in now:
        earlier = before.get(key)
        if earlier is not None and any(value for labels in earlier for value in labels.values()):
            now[key] = earlier
    return now


def _holders(by_endpoint: Mapping[str, EnginePlan], findings: list[Finding]) -> dict[int | None, list[EnginePlan]]:
    """GPU index -> the engines on it: those whose plan holds it, and those a finding of this refresh names on it
    (an engine that exited with its GPU lost no longer holds it in its plan). A plan set by hand where no engine
    runs names no workload."""
    held: dict[int | None, list[EnginePlan]] = {}
    for plan in by_endpoint.values():
        for index in plan.gpu_indices:
            held.setdefault(index, []).append(plan)
    for finding in findings:
        named = by_endpoint.get(finding.endpoint) if finding.endpoint is not None else None
        if named is not None and finding.gpu_index is not None and named not in held.get(finding.gpu_index, []):
            held.setdefault(finding.gpu_index, []).append(named)
    return held


def _less_endpoint(labels: dict[str, object]) -> dict[str, object]:
    """An engine's labels on a GPU's finding: its endpoint stays the finding's own (none)."""
    return {name: value for name, value in labels.items() if name != "endpoint"}


def _process_labels(sample: Sample, pid: int | None) -> dict[str, object]:
    if pid is None:
        return {}
    pod = next((p.pod for p in sample.processes if p.pid == pid and p.pod), None)
    named = split_pod(pod)
    return {"process_namespace": named["namespace"], "process_pod": named["pod"]} if pod else {}
