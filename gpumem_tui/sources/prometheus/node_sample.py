"""One node of the fleet as a `Sample` (pure): the fleet's records of the node (`fleet.build` over its series)
turned into what the single-node screen and `check` read, so `judge()` and `diagnose` run unchanged. Prometheus
gives no pids: pods stand in for processes unless the node's `gpumem-tui export` publishes them.
docs/design/fleet.md has the mapping."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.models import GpuRecord, MigInstance, ProcessRecord, Sample, SourceError
from gpumem_tui.sources.prometheus.answer_forms import LOOKBACK_S
from gpumem_tui.sources.prometheus.client import RangeResult, Result, Series
from gpumem_tui.sources.prometheus.fleet import build
from gpumem_tui.sources.prometheus.held_back import answers_as_of
from gpumem_tui.sources.prometheus.labels import AUTO, LabelChoice, host_of, node_of, projected, workload_of
from gpumem_tui.sources.prometheus.node_queries import ELSEWHERE, EXPORTED, EXPORTER_ONLY, NAMES, NodeQueries
from gpumem_tui.sources.prometheus.read_rules import Stale
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetGpu, FleetSample

SOURCE = "prometheus"
NO_PIDS = (
    "Prometheus gives no pids: the processes on each GPU and what each holds are unknown, pods stand in for them "
    "(`gpumem-tui export` on the node publishes its processes)"
)

FLEET_WIDE = ("memory", "engines")
"""`FleetSample.unknown` keys that say the whole selector matched no series: of one node that has GPUs, "no
vLLM series" means it runs no engine, which its empty list of engines says."""


TARGET_DOWN = "its scrape target is down in Prometheus (up == 0)"
"""What an engine whose vLLM target's `up` is 0 said, as the scraper records a failed answer."""
REPORTED = "the engine reported "
"""How the fleet's join (`fleet_engines._number`) starts the reason of an engine's value that is no reading."""


class NodeNotFound(ValueError):
    """No series in Prometheus names the node (within the last hour)."""


@dataclass
class NodeRead:
    """One read of a node: the fleet's records of it, and `gpumem-tui export`'s per-process series."""

    fleet: FleetSample
    processes: list[Series] = field(default_factory=list)
    node_label: str = "auto"
    """The label read as the node (--node-label)."""


def only(sample: FleetSample, node: str) -> FleetSample:
    """The fleet sample cut to one node: its GPUs, the engines joined to it, its findings."""
    return sample.model_copy(
        update={
            "nodes": [n for n in sample.nodes if n.name == node],
            "gpus": [g for g in sample.gpus if g.node == node],
            "engines": [e for e in sample.engines if e.node == node],
            "node_findings": [f for f in sample.node_findings if f.node == node],
            "stale_nodes": {n: a for n, a in sample.stale_nodes.items() if n == node},
            "pod_nodes": {p: n for p, n in sample.pod_nodes.items() if n == node},
            "targets_down": [t for t in sample.targets_down if _target_node(t, sample.pod_nodes) == node],
        }
    )


def pods_of(labels: Iterable[dict[str, str]], node: str, choice: LabelChoice = AUTO) -> list[tuple[str, str]]:
    """The (namespace, pod)s dcgm-exporter puts on the node's GPUs, from `gpu_pods`' series' labels read with
    the chosen node and pod labels."""
    seen = (projected(each, choice) for each in labels)
    return sorted({pod for each in seen if node_of(each) == node and (pod := workload_of(each)) is not None})


def uuids_of(labels: Iterable[dict[str, str]], node: str, choice: LabelChoice = AUTO) -> list[str]:
    """The UUIDs of the node's GPUs, from `gpu_pods`' series' labels read with the chosen node label."""
    return sorted({u for each in labels if node_of(projected(each, choice)) == node and (u := each.get("UUID"))})


def exporter_names(labels: Iterable[dict[str, str]], node: str) -> tuple[str, ...]:
    """The names other than `node` that the node's own `gpumem-tui export` gives it, from the labels of
    `exporter_gpus`' series."""
    return tuple(sorted({name for each in labels if (name := node_of(each)) is not None and name != node}))


Answered = TypeVar("Answered", Result, RangeResult)
DCGM_NAMES = ("gpu_memory", "nodes_seen")
"""The first round's dcgm-exporter answers that say it names the node: its memory, or a sample within the hour."""


def second_round(queries: NodeQueries, first: Mapping[str, Answered]) -> dict[str, str]:
    """What a node's read asks once its first round is in, instant or range alike: the engines of the node's pods
    and host; under --node-label, the names its own exporter gives it; and where no dcgm-exporter series names
    the node (it may run only gpumem-tui export), the fleet's exporter queries narrowed to it."""
    held = [s.labels for s in first["gpu_pods"].series] if "gpu_pods" in first else []
    asks = queries.engine_queries(pods_of(held, queries.node, queries.labels))
    uuids = uuids_of(held, queries.node, queries.labels)
    if queries.labels.node != "auto" and uuids:  # its own gpumem-tui export may name it otherwise
        asks[NAMES] = queries.exporter_gpus(uuids)
    if not dcgm_names(first):
        asks |= queries.exporter_only()
    return asks


def dcgm_names(first: Mapping[str, Answered]) -> bool:
    """Whether some dcgm-exporter series names the node in its first round's answers."""
    return any(first[name].series for name in DCGM_NAMES if name in first)


def second_answers(more: dict[str, Answered], node: str) -> tuple[dict[str, Answered], tuple[str, ...]]:
    """The second round's answers the node is read with, and the other names its own exporter gives it (asked
    again by them): the exporter-only answers are left out where dcgm-exporter reports the node's GPUs under
    another name (the fleet lists it under that name)."""
    elsewhere = more.pop(ELSEWHERE, None)
    if elsewhere is not None and elsewhere.series:
        more = {name: result for name, result in more.items() if name not in EXPORTER_ONLY}
    named = more.pop(NAMES, None)
    return more, () if named is None else exporter_names((s.labels for s in named.series), node)


def node_read(
    source: str, at: float, results: dict[str, Result], failures: dict[str, str], queries: NodeQueries, stale: Stale
) -> NodeRead:
    """The node's read of its queries' answers at `at` (pure): an instant read's, or one step of a range read's
    (node_history.py), built alike. dcgm-exporter's series are read with the chosen labels, and the node's own
    `gpumem-tui export`'s series under another name are the node's, as the fleet joins them."""
    results = _named(results, queries)
    answers = {name: result for name, result in results.items() if name != "gpu_processes"}
    processes = results.get("gpu_processes", Result()).series
    sample = build(source, at, answers, failures, queries.matchers, queries.labels, stale=stale)
    kept = [s for s in processes if node_of(s.labels) == queries.node]
    return NodeRead(only(sample, queries.node), kept, queries.labels.node)


def _named(results: dict[str, Result], queries: NodeQueries) -> dict[str, Result]:
    """The answers with the exporter's series that name the node otherwise (`queries.exporter_names`) named
    `queries.node` in `Hostname`, the label `node_of` reads first (as gpumem_export.py renames them)."""
    if not queries.exporter_names:
        return results
    others = set(queries.exporter_names)

    def named(s: Series) -> Series:
        return (
            Series({**s.labels, "Hostname": queries.node}, s.value, s.timestamp) if node_of(s.labels) in others else s
        )

    return {
        name: Result([named(s) for s in r.series], r.warnings) if name in EXPORTED else r for name, r in results.items()
    }


def _target_node(labels: dict[str, str], pod_nodes: dict[str, str]) -> str | None:
    """The node of a scrape target: its pod's (dcgm-exporter's allocation), else its address's host."""
    if labels.get("pod"):
        return pod_nodes.get(f"{labels.get('namespace', '')}/{labels['pod']}")
    return host_of(labels.get("instance", ""))


def node_sample(read: NodeRead, node: str) -> Sample:
    """The Sample of `node` (pure). Raises NodeNotFound when no series names it."""
    fleet = read.fleet
    if not any(n.name == node for n in fleet.nodes):
        label = "" if read.node_label == "auto" else f" by its {read.node_label} label (--node-label {read.node_label})"
        raise NodeNotFound(
            f"no dcgm-exporter or gpumem-tui export series names node {node!r}{label} in the last hour "
            f"(at {fleet.source})"
        )
    found = next(n for n in fleet.nodes if n.name == node)
    age, source = found.data_age_s, found.memory_from or "dcgm-exporter"
    errors = [
        SourceError(source=SOURCE, message=f"{what} unknown, because {why}")
        for what, why in fleet.unknown.items()
        if what not in FLEET_WIDE
    ]
    if fleet.error:
        errors.append(SourceError(source=SOURCE, message=f"some queries failed: {fleet.error}"))
    errors += [SourceError(source=SOURCE, message=f"the server said: {w}") for w in fleet.warnings]
    if (held := answers_as_of(fleet.held_back_s)) is not None:  # the node's age counts it: say why it is older
        errors.append(SourceError(source=SOURCE, message=f"{held}: the node's data is that much older"))
    if age is None:
        errors.append(
            SourceError(
                source=SOURCE,
                message=f"node {node}: no {source} sample in the last 5 min (Prometheus's lookback)",
                hint=f"check that {source} runs on the node and that Prometheus scrapes it",
            )
        )
    gpus, notes = gpu_records(fleet.gpus)
    indices = {g.uuid: g.index for g in gpus if g.uuid}
    return Sample(
        timestamp=fleet.evaluated_at - age if age is not None else _seen_at(fleet),
        hostname=node,
        source=SOURCE,
        gpus=gpus,
        processes=_processes(read.processes, indices),
        engines=[endpoint_status(e, fleet, down) for down in [targets_down(fleet)] for e in fleet.engines],
        errors=[*errors, *notes],
    )


def _seen_at(fleet: FleetSample) -> float:
    """A node past the lookback: its data is at least 5 min old; the sample is dated then, to look stale."""
    return max(0.0, fleet.evaluated_at - LOOKBACK_S)


def _index(gpu: FleetGpu) -> int | None:
    return int(gpu.index) if gpu.index is not None and gpu.index.isdigit() else None


def gpu_records(found: list[FleetGpu]) -> tuple[list[GpuRecord], list[SourceError]]:
    """GPU records (MIG GPU instances under their card), and per GPU what is unknown and who holds it."""
    cards = [g for g in found if g.gpu_instance is None and _index(g) is not None]
    instances = [g for g in found if g.gpu_instance is not None and _index(g) is not None]
    records: dict[int, GpuRecord] = {}
    notes: list[SourceError] = []
    for gpu in cards:
        index = _index(gpu)
        assert index is not None  # kept above
        records[index] = GpuRecord(
            index=index,
            uuid=gpu.uuid,
            name=gpu.card,
            memory_total_bytes=gpu.total_bytes,
            memory_used_bytes=gpu.used_bytes,
            memory_free_bytes=gpu.free_bytes,
            memory_reserved_bytes=gpu.reserved_bytes,
            mig_enabled=False,
        )
    for gpu in instances:
        index = _index(gpu)
        assert index is not None  # kept above
        card = records.get(index) or GpuRecord(index=index, uuid=gpu.uuid, name=gpu.card)
        profile = gpu.gpu_instance_profile
        mig = MigInstance(
            gpu_instance_id=int(gpu.gpu_instance) if gpu.gpu_instance and gpu.gpu_instance.isdigit() else None,
            name=" ".join(filter(None, (gpu.card, "MIG", profile))) if profile else None,  # as NVML names it
            memory_total_bytes=gpu.total_bytes,
            memory_used_bytes=gpu.used_bytes,
            memory_free_bytes=gpu.free_bytes,
        )
        records[index] = card.model_copy(update={"mig_enabled": True, "mig_instances": [*card.mig_instances, mig]})
    holders: dict[str, list[str]] = {}
    for gpu in found:
        index = _index(gpu)
        where = f"{index}" + (f":{gpu.gpu_instance}" if gpu.gpu_instance is not None else "")
        for what, why in gpu.unknown.items():
            said = why if why.startswith("n/a") else f"unknown, because {why}"
            notes.append(SourceError(source=SOURCE, message=f"GPU {where} {what}: {said}", gpu_index=index))
        holders.setdefault(", ".join(gpu.pods) or "", []).append(where)
    notes.append(SourceError(source=SOURCE, message=NO_PIDS))
    for pods, gpus in holders.items():
        held = f"held by pod {pods} (dcgm-exporter's allocation)" if pods else "no pod holds it"
        notes.append(SourceError(source=SOURCE, message=f"GPU {', '.join(gpus)}: {held}"))
    return [records[i] for i in sorted(records)], notes


def _processes(series: list[Series], indices: dict[str, int]) -> list[ProcessRecord]:
    """`gpumem-tui export`'s processes that are not an engine; its `pid="other"` rest is left out."""
    found = []
    for s in series:
        pid, gpu = s.labels.get("pid", ""), s.labels.get("gpu", "")
        index = int(gpu) if gpu.isdigit() else indices.get(s.labels.get("UUID", ""))
        if not pid.isdigit() or index is None or not math.isfinite(s.value) or s.value < 0:
            continue
        pod = "/".join(w) if (w := workload_of(s.labels)) else None
        found.append(
            ProcessRecord(
                pid=int(pid),
                gpu_index=index,
                gpu_memory_bytes=round(s.value),
                name=s.labels.get("process_name") or None,
                pod=pod,
                visible=False,
                note="read from gpumem-tui export's series in Prometheus",
            )
        )
    return found


def _reported(why: str) -> float | None:
    """The value the fleet read as no reading (`the engine reported NaN: no reading`), as the engine sent it;
    None for any other reason a field is unknown."""
    if not why.startswith(REPORTED):
        return None
    try:
        return float(why.removeprefix(REPORTED).removesuffix(": no reading"))  # `NaN`, `+Inf`, `-1`
    except ValueError:
        return None


def _count(value: float | None) -> int | None:
    return None if value is None else round(value)


def _devices(engine: FleetEngine, fleet: FleetSample) -> list[str]:
    """The engine's GPUs as device selectors: each card's UUID; on a card in MIG mode, the GPU instances its pod
    holds, as `MIG-<card's UUID>/<GPU instance>` (the form drivers before R470 gave a MIG device, which names
    the instance by its card), so the plan is made against the instance (autoplan.py), as the fleet's is."""
    pod = f"{engine.namespace or ''}/{engine.pod}" if engine.pod else None
    devices = []
    for uuid in engine.gpus:
        held = [
            g.gpu_instance
            for g in fleet.gpus
            if g.uuid == uuid and g.gpu_instance is not None and pod is not None and pod in g.pods
        ]
        if held and uuid.startswith("GPU-"):
            devices += [f"MIG-{uuid}/{gi}" for gi in held]
        else:
            devices.append(uuid)
    return devices


def targets_down(fleet: FleetSample) -> set[tuple[str | None, str | None]]:
    """The (job, instance) of each target down."""
    return {(t.get("job"), t.get("instance")) for t in fleet.targets_down}


def endpoint_status(
    engine: FleetEngine, fleet: FleetSample, down: set[tuple[str | None, str | None]] | None = None
) -> EndpointStatus:
    """An engine as the scraper records it; its target down (up == 0) is `down` (`down`: `targets_down(fleet)`,
    made once where every engine of a sample is asked: 10^4 engines and as many targets down)."""
    url = f"{engine.namespace}/{engine.pod}" if engine.pod else engine.instance or "?"
    down_now = bool(engine.job) and (engine.job, engine.instance) in (targets_down(fleet) if down is None else down)
    reported = {f: v for f, why in engine.unknown.items() if (v := _reported(why)) is not None}
    notes = [f"{field} unknown, because {why}" for field, why in engine.unknown.items() if field not in reported]
    notes.append(f"{engine.joined}: {engine.join_reason}")
    record = EngineRecord.model_validate(
        {
            "endpoint": url,
            "engine": engine.kind,
            "version_family": "v1" if engine.engine is not None else None,
            "model": engine.model_name,
            "engine_index": engine.engine,
            "kv_usage_fraction": engine.kv_usage_fraction,
            "kv_pool_tokens": engine.pool_tokens,
            "block_size": engine.block_size,
            "num_gpu_blocks": engine.num_gpu_blocks,
            "cache_dtype": engine.cache_dtype if engine.cache_dtype not in (None, "", "None") else None,
            "gpu_memory_utilization": engine.gpu_memory_utilization,
            "requests_running": _count(engine.requests_running),
            "requests_waiting": _count(engine.requests_waiting),
            "preemptions_per_min": engine.preemptions_per_min,
            "notes": notes,
            **reported,  # as the engine sent them: the record drops them as the live scraper's would, and says so
        }
    )
    return EndpointStatus(
        url=url,
        state="down" if down_now else "ok",
        error=TARGET_DOWN if down_now else None,
        devices=_devices(engine, fleet),
        records=[] if down_now else [record],
    )
