"""What nodes that run `gpumem-tui export` add to a fleet sample (docs/export.md): the GPU memory of nodes
dcgm-exporter does not report (dcgm-exporter's figures win where both do), the engines Prometheus does not
scrape, each engine's own plan, and the memory of processes that are not an engine. The pure half of the read:
query answers in, an updated FleetSample out; docs/design/fleet.md has the joins."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from urllib.parse import urlsplit

from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError, Result, Series
from gpumem_tui.sources.prometheus.engine_series import SAID
from gpumem_tui.sources.prometheus.labels import host_of, node_of, per_node, workload_of
from gpumem_tui.sources.prometheus.queries import LOOK_BACK_S, Queries
from gpumem_tui.sources.prometheus.query_table import TABLE, names
from gpumem_tui.sources.prometheus.read_rules import Stale
from gpumem_tui.sources.prometheus.records import (
    Coverage,
    FleetEngine,
    FleetGpu,
    FleetNode,
    FleetProcess,
    FleetSample,
)
from gpumem_tui.text import host_port, loopback

GATE = "exporters_age"
"""Asked first: which nodes run `gpumem-tui export`. Where none does, the other queries are not sent (each
costs the client a few ms of CPU whatever it answers)."""
QUERY_NAMES = names(lambda q: q.overview == "gated")
"""The queries that read `gpumem-tui export`'s series (the gate first), all per node or per engine but
`exported_gpu_memory` and `gpu_processes` (narrowed to the GPUs that need a look in the overview)."""
SEEN = "exporters_seen"
"""The nodes whose exporter published within the hour (a slow fact: sent with the fleet's, not by `read`): one
whose exporter stopped is stale, with its age, never silently gone once Prometheus's lookback has passed."""
RENAMED_BY = "exporter_gpus"
"""Asked only where `--node-label` names the label read as a node: one GPU of each exporter's node, so a node
that dcgm-exporter names otherwise (its exporter pod's address as `instance`) is one node (`_renames`)."""
OURS = "gpumem-tui export"
FIELDS = ("used", "free", "reserved", "total")
NO_EXPORTER = (
    "no gpumem-tui export on the node: dcgm-exporter says which pod a GPU is allocated to, not which processes "
    "hold its memory"
)
"""Why a node's `other_processes_bytes` is unknown until its exporter says (set where the node is made)."""

GONE = f"no {OURS} sample in the last 5 min (Prometheus's lookback)"
"""Why the figures of a node only its exporter reported are unknown once it stopped (stale, named for the hour)."""

EngineId = tuple[str | None, str, str, str | None, str | None]
"""(node, model_name, engine index, `namespace/pod`, endpoint URL)."""


async def read(client: PrometheusClient, queries: Queries, at: float) -> dict[str, Result | PrometheusError]:
    """Each query's answer or error by name: GATE, then the others only when some node runs an exporter (or
    the gate itself failed, so whether one does is unknown)."""
    try:
        gate: Result | PrometheusError = await client.query(TABLE[GATE].promql(queries), at)
    except PrometheusError as exc:
        gate = exc
    if isinstance(gate, Result) and not gate.series:
        return {GATE: gate}
    import asyncio  # where a server is read: the simulated fleet loads no event loop

    asked = rest(queries)
    answers = await asyncio.gather(
        *(client.query(TABLE[name].promql(queries), at) for name in asked), return_exceptions=True
    )
    found: dict[str, Result | PrometheusError] = {GATE: gate}
    for name, answer in zip(asked, answers, strict=True):
        if isinstance(answer, (Result, PrometheusError)):
            found[name] = answer
        elif isinstance(answer, BaseException):
            raise answer
    return found


def rest(queries: Queries) -> tuple[str, ...]:
    """The queries asked after the gate, where some node runs an exporter: RENAMED_BY only under --node-label."""
    return tuple(n for n in QUERY_NAMES if n != GATE and (n != RENAMED_BY or queries.labels.node != "auto"))


def with_exporters(
    sample: FleetSample, results: Mapping[str, Result], failures: Mapping[str, str], stale: Stale
) -> FleetSample:
    """`sample` with what the nodes' own exporters say added; unchanged where no node runs one. A node only an
    exporter reports is stale as a dcgm-exporter node is: by the judge's rule `stale` of its newest sample."""
    empty = Result()
    if not any(results.get(name, empty).series for name in (*QUERY_NAMES, SEEN)):
        return sample  # no node runs one (each node's `other_processes_bytes` says so already)
    renames = _renames(sample, results)
    if renames:
        results = _renamed(results, renames)
        found = [f.model_copy(update={"node": renames.get(f.node, f.node)}) for f in sample.node_findings]
        sample = sample.model_copy(update={"node_findings": found})
    ages = per_node(results.get("exporters_age", empty).series, min)
    known = {n.name for n in sample.nodes}
    gone = {
        node: sample.evaluated_at - newest
        for node, newest in per_node(results.get(SEEN, empty).series, max).items()
        if node not in ages and node not in known and sample.evaluated_at - newest <= LOOK_BACK_S
    }
    sums = _sums(results.get("exported_node_memory", empty).series)
    cards = _cards(results.get("exported_node_gpus", empty).series)
    processes = _node_processes(results.get("node_processes", empty).series)
    gpus = _gpus(sample, results.get("exported_gpu_memory", empty).series, results.get("gpu_processes", empty).series)
    plans_failed = failures.get("engine_plans")
    engines, extra = _engines(sample.engines, results, ages, plans_failed)
    nodes = _nodes(sample, sums, cards, processes, ages | gone, extra, "node_processes" in failures, set(gone))
    unknown = dict(sample.unknown)
    if sums:
        unknown.pop("memory", None)
    if extra:
        unknown.pop("engines", None)
    old = dict(sample.stale_nodes)
    for node in nodes:
        age = ages.get(node.name)
        if node.memory_from == OURS and age is not None and stale(age):
            old[node.name] = age
    old |= gone
    fresh = [n.data_age_s for n in nodes if n.data_age_s is not None and n.name not in old]
    return sample.model_copy(
        update={
            "nodes": nodes,
            "gpus": gpus,
            "engines": engines,
            "exporter_nodes": ages | gone,
            "stale_nodes": old,
            "unknown": unknown,
            "coverage": Coverage.of(nodes, engines),
            "data_age_s": max(fresh) if fresh else None,
        }
    )


def _renames(sample: FleetSample, results: Mapping[str, Result]) -> dict[str, str]:
    """An exporter's node name -> dcgm-exporter's name for the node that reports the same GPU, where the two
    differ: the label read as the node (`--node-label`) names the node by dcgm-exporter's series, and the
    exporter's series name it otherwise (their own `Hostname`, their target's address)."""
    dcgm = {
        s.labels["UUID"]: node
        for s in results.get("gpu_pods", Result()).series
        if (node := node_of(s.labels)) and s.labels.get("UUID")
    }
    dcgm |= {g.uuid: g.node for g in sample.gpus if g.uuid}
    renames = {}
    for s in results.get(RENAMED_BY, Result()).series:
        node, there = node_of(s.labels), dcgm.get(s.labels.get("UUID", ""))
        if node is not None and there is not None and there != node:
            renames[node] = there
    return renames


def _renamed(results: Mapping[str, Result], renames: Mapping[str, str]) -> dict[str, Result]:
    """The exporters' answers with each renamed node's series labelled by dcgm-exporter's name (`Hostname`,
    the label `node_of` reads first)."""

    def named(s: Series) -> Series:
        node = node_of(s.labels)
        there = None if node is None else renames.get(node)
        return s if there is None else Series({**s.labels, "Hostname": there}, s.value, s.timestamp)

    return {
        name: Result([named(s) for s in r.series], r.warnings) if name in (*QUERY_NAMES, SEEN) else r
        for name, r in results.items()
    }


def _field(labels: Mapping[str, str]) -> str:
    return labels.get("__name__", "").removeprefix("gpumem_gpu_memory_").removesuffix("_bytes")


def _sums(series: list[Series]) -> dict[str, dict[str, float]]:
    sums: dict[str, dict[str, float]] = defaultdict(dict)
    for s in series:
        node = node_of(s.labels)
        if node is not None:
            sums[node][_field(s.labels)] = s.value
    return sums


def _cards(series: list[Series]) -> dict[str, dict[str, int]]:
    """node -> card model -> GPUs (the most that report any field)."""
    cards: dict[str, dict[str, int]] = defaultdict(dict)
    for s in series:
        node = node_of(s.labels)
        if node is not None and math.isfinite(s.value):
            card = s.labels.get("modelName") or "?"
            cards[node][card] = max(cards[node].get(card, 0), int(s.value))
    return cards


def _node_processes(series: list[Series]) -> dict[str, float]:
    return {node: s.value for s in series if (node := node_of(s.labels)) is not None}


def _bytes(value: float | None, what: str, unknown: dict[str, str], field: str) -> int | None:
    if value is None:
        return None
    if not math.isfinite(value) or value < 0:
        said = "NaN" if math.isnan(value) else f"{value:g}".replace("inf", "Inf")
        unknown[field] = f"gpumem-tui export reported {what} as {said}: no reading"
        return None
    return round(value)


def _figures(values: Mapping[str, float], unknown: dict[str, str]) -> dict[str, int | None]:
    """used, free, reserved and total bytes of a GPU or a node by the exporter's figures."""
    figures = {f"{field}_bytes": _bytes(values.get(field), field, unknown, f"{field}_bytes") for field in FIELDS}
    for field in ("used", "free", "total"):
        if field not in values:
            unknown[f"{field}_bytes"] = f"no gpumem_gpu_memory_{field}_bytes series"
    if "reserved" not in values:
        unknown["reserved_bytes"] = (
            "n/a: the driver reports no reserved memory apart (NVML memory v1): used includes it"
        )
    return figures


def _gpus(sample: FleetSample, memory: list[Series], processes: list[Series]) -> list[FleetGpu]:
    """dcgm-exporter's GPUs, then the exporter's GPUs of nodes dcgm-exporter does not report, each with the
    processes the exporter names on it."""
    held: dict[tuple[str | None, str | None], list[FleetProcess]] = defaultdict(list)
    for s in processes:
        if not math.isfinite(s.value):
            continue
        workload = workload_of(s.labels)
        held[(node_of(s.labels), s.labels.get("UUID"))].append(
            FleetProcess(
                pid=s.labels.get("pid", "?"),
                name=s.labels.get("process_name") or None,
                pod="/".join(workload) if workload else None,
                used_bytes=round(s.value),
            )
        )
    reported = {g.node for g in sample.gpus} | {n.name for n in sample.nodes if n.gpus}
    by_gpu: dict[tuple[str, str | None], dict[str, float]] = defaultdict(dict)
    labels_of: dict[tuple[str, str | None], Mapping[str, str]] = {}
    for s in memory:
        node = node_of(s.labels)
        if node is None or node in reported:
            continue
        key = (node, s.labels.get("UUID"))
        by_gpu[key][_field(s.labels)] = s.value
        labels_of[key] = s.labels
    ours = []
    for (node, uuid), values in sorted(by_gpu.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        unknown: dict[str, str] = {}
        figures = _figures(values, unknown)
        ours.append(
            FleetGpu(
                node=node,
                index=labels_of[(node, uuid)].get("gpu"),
                uuid=uuid,
                card=labels_of[(node, uuid)].get("modelName"),
                memory_from=OURS,
                unknown=unknown,
                **figures,
            )
        )
    return [
        g.model_copy(update={"processes": _largest_first(held[(g.node, g.uuid)])}) if (g.node, g.uuid) in held else g
        for g in [*sample.gpus, *ours]
    ]


def _largest_first(processes: list[FleetProcess]) -> list[FleetProcess]:
    """The named processes by memory held, the `other` row last."""
    return sorted(processes, key=lambda p: (p.pid == "other", -p.used_bytes, p.pid))


def _nodes(
    sample: FleetSample,
    sums: Mapping[str, Mapping[str, float]],
    cards: Mapping[str, Mapping[str, int]],
    processes: Mapping[str, float],
    ages: Mapping[str, float],
    extra: list[FleetEngine],
    processes_failed: bool,
    gone: set[str],
) -> list[FleetNode]:
    """Each node with what its exporter adds; a node it adds nothing to is passed on as it is (no copy: a
    thousand nodes without an exporter cost nothing here). `gone`: nodes only an exporter reported, within the
    hour but not Prometheus's lookback (their figures unknown, their age in `ages`)."""
    served: dict[str, list[str]] = defaultdict(list)
    for engine in extra:
        if engine.node is not None:
            served[engine.node].append(engine.name)
    known = {n.name: n for n in sample.nodes}
    nodes = []
    for name in sorted(set(known) | set(sums) | set(ages)):
        node = known.get(name)
        if node is not None and name not in ages and name not in sums and name not in processes:
            nodes.append(node)
            continue
        node = node or FleetNode(name=name)
        unknown = {k: v for k, v in node.unknown.items() if k != "other_processes_bytes"}
        update: dict[str, object] = {"engines": [*node.engines, *served.get(name, [])]}
        update |= _processes_of(name, processes, processes_failed, gone, unknown)
        update |= _memory_of(node, sums.get(name), cards.get(name, {}), ages.get(name), unknown)
        nodes.append(node.model_copy(update={**update, "unknown": unknown}))
    return nodes


def _processes_of(
    name: str, processes: Mapping[str, float], failed: bool, gone: set[str], unknown: dict[str, str]
) -> dict[str, object]:
    """A node's memory held by processes that are not an engine, by its exporter (why unknown in `unknown`;
    every figure of a node `gone` is)."""
    if name in gone:
        for field in ("used_bytes", "free_bytes", "reserved_bytes", "total_bytes", "other_processes_bytes"):
            unknown[field] = GONE
        return {}
    if name in processes:
        return {"other_processes_bytes": _bytes(processes[name], "process memory", unknown, "other_processes_bytes")}
    unknown["other_processes_bytes"] = (
        "the query of gpumem_process_memory_used_bytes failed"
        if failed
        else f"its {OURS} publishes no gpumem_process_memory_used_bytes"
    )
    return {}


def _memory_of(
    node: FleetNode,
    sums: Mapping[str, float] | None,
    cards: Mapping[str, int],
    age: float | None,
    unknown: dict[str, str],
) -> dict[str, object]:
    """What the exporter says of a node's GPU memory: beside dcgm-exporter's figures, its used memory to compare;
    else the node's figures (`sums`), or why there are none."""
    if node.gpus:
        used = (sums or {}).get("used")
        return {"exporter_used_bytes": round(used)} if used is not None and math.isfinite(used) else {}
    data_age = age if node.data_age_s is None else node.data_age_s
    if sums is not None:
        for field in ("used_bytes", "free_bytes", "reserved_bytes", "total_bytes"):
            unknown.pop(field, None)
        figures = _figures(sums, unknown)
        return {
            **figures,
            "memory_from": OURS,
            "cards": dict(cards),
            "gpus": sum(cards.values()),
            "data_age_s": data_age,
        }
    for field in ("used_bytes", "free_bytes", "reserved_bytes", "total_bytes"):  # neither exporter reports its GPUs
        unknown.setdefault(
            field, f"its {OURS} publishes no GPU memory (gpumem_exporter_source_up says whether it reads them)"
        )
    return {"data_age_s": data_age}


def _port(address: str | None) -> str | None:
    """The port of `http://10.0.0.5:8000/` or `10.0.0.5:8000`."""
    found = host_port(address if "//" in address else f"//{address}") if address else None
    return None if found is None or found[1] is None else str(found[1])


def _engine_id(labels: Mapping[str, str]) -> EngineId:
    workload = workload_of(labels)
    return (
        node_of(labels),
        labels.get("model_name", ""),
        labels.get("engine") or "0",
        "/".join(workload) if workload else None,
        labels.get("endpoint") or None,
    )


def _engines(
    engines: list[FleetEngine],
    results: Mapping[str, Result],
    ages: Mapping[str, float],
    plans_failed: str | None,
) -> tuple[list[FleetEngine], list[FleetEngine]]:
    """vLLM's engines with the plans of their nodes' exporters, then the exporters' engines vLLM's series lack
    (each with every GPU its plan is drawn over, as the pod-to-GPU join names a vLLM engine's), and those
    added. Where the plans could not be read, the engines of nodes that run an exporter say so."""
    update, extra = _exporters_engines(engines, results, ages)
    if plans_failed is not None:
        why = {"planned_bytes": f"the query of gpumem-tui export's plans failed: {plans_failed}"}
        for i, e in enumerate(engines):
            if e.node in ages:
                update[i] = {"unknown": {**e.unknown, **why}}
        extra = [e.model_copy(update={"unknown": {**e.unknown, **why}}) for e in extra]
    if not update and not extra:
        return engines, []
    joined = [e.model_copy(update=update[i]) if update.get(i) else e for i, e in enumerate(engines)]
    every = sorted(
        [*joined, *extra],
        key=lambda e: (e.model_name, e.namespace or "", e.pod or "", e.instance or "", e.engine or ""),
    )
    return every, extra


def _exporters_engines(
    engines: list[FleetEngine], results: Mapping[str, Result], ages: Mapping[str, float]
) -> tuple[dict[int, dict[str, object]], list[FleetEngine]]:
    """What the exporters say of each engine: the fields to update of vLLM's engines (by position: the plan the
    node made), and the engines vLLM's series lack."""
    empty = Result()
    planned = {_engine_id(s.labels): s.value for s in results.get("engine_plans", empty).series}
    drawn: dict[EngineId, set[str]] = defaultdict(set)
    for s in results.get("engine_plan_gpus", empty).series:
        drawn[_engine_id(s.labels)].add(s.labels.get("UUID", "?"))
    said: dict[EngineId, dict[str, Series]] = defaultdict(dict)
    for s in results.get("exported_engines", empty).series:
        said[_engine_id(s.labels)][s.labels.get("__name__", "")] = s
    update: dict[int, dict[str, object]] = {}
    extra = []
    alike: dict[tuple[str, str], list[int]] = defaultdict(list)  # by model and index: one pass, not one per node
    for i, e in enumerate(engines):
        alike[(e.model_name, e.engine or "0")].append(i)
    for found in sorted(set(planned) | set(said), key=lambda i: tuple(str(k) for k in i)):
        at = _match(engines, found, alike.get((found[1], found[2]), []))
        fields = _plan_fields(planned.get(found), None if at is None else engines[at])
        if at is not None:
            update[at] = fields
        elif found[4] is not None and (found[0] in ages or found in said):  # a plan set by hand names no engine
            uuids = drawn.get(found, set())
            extra.append(_from_exporter(found, said.get(found, {}), sorted(uuids), len(uuids), fields))
    return update, extra


def _plan_fields(plan: float | None, engine: FleetEngine | None) -> dict[str, object]:
    """An exporter's plan of an engine as its fields; it wins over one made here from the catalog."""
    if plan is None or not math.isfinite(plan) or plan <= 0:
        return {}
    fields: dict[str, object] = {"planned_bytes": round(plan), "plan_from": "exporter"}
    if engine is not None:
        fields["unknown"] = {k: v for k, v in engine.unknown.items() if k != "planned_bytes"}
    return fields


def _match(engines: list[FleetEngine], found: EngineId, alike: list[int]) -> int | None:
    """The vLLM engine an exporter's engine is (`alike`: the positions of those of its model and engine index):
    the same pod; without a pod, on the same node at the same port, or the node's only such engine."""
    node, _, _, pod, endpoint = found
    if pod is not None:
        same = [i for i in alike if _pod(engines[i]) == pod]
        if same:
            return same[0]
    here = [i for i in alike if engines[i].node == node and node is not None]
    port = _port(endpoint)
    at_port = [i for i in here if port is not None and _port(engines[i].instance) == port]
    if len(at_port) == 1:
        return at_port[0]
    return here[0] if len(here) == 1 else None


def _pod(engine: FleetEngine) -> str | None:
    return f"{engine.namespace or ''}/{engine.pod}" if engine.pod else None


def _address(endpoint: str | None, node: str | None) -> str | None:
    """The engine's `host:port` as its endpoint names it; one on the node's loopback as `node:port`, the form
    vLLM's own `instance` takes on bare metal (`127.0.0.1:8000` would name every node's engine alike)."""
    if not endpoint:
        return None
    found = host_port(endpoint)
    if found is None:
        return endpoint
    host, port = found
    if loopback(host) and node is not None and port is not None:
        return f"{node}:{port}"
    return urlsplit(endpoint).netloc or endpoint


def _from_exporter(
    found: EngineId, series: Mapping[str, Series], uuids: list[str], gpus: int, plan: Mapping[str, object]
) -> FleetEngine:
    node, model, index, pod, endpoint = found
    labels = next(iter(series.values())).labels if series else {}
    unknown: dict[str, str] = {}
    values: dict[str, float | None] = {}
    for field, name in (("kv_usage_fraction", "usage_ratio"), ("pool_tokens", "pool_tokens")):
        s = series.get(f"gpumem_engine_kv_cache_{name}")
        if s is None or not math.isfinite(s.value) or s.value < 0:
            unknown[field] = (
                f"the node's {OURS} publishes no gpumem_engine_kv_cache_{name} for it (the engine did not answer "
                "its last refresh)"
            )
            values[field] = None
        else:
            values[field] = s.value
    for field in ("requests_running", "requests_waiting", "preemptions_per_min"):
        unknown[field] = f"no {SAID} series for it: Prometheus does not scrape the engine, only its node's {OURS}"
    namespace, _, name = pod.rpartition("/") if pod else ("", "", "")
    address = _address(endpoint, node)
    where = f"{OURS} on node {node}"
    joined = {
        "gpus": uuids,
        "gpu_count": gpus or None,
        "joined": "found" if gpus else "assumed",
        "join_reason": f"{where} draws its plan over {gpus} GPU(s) of it"
        if gpus
        else f"{where} names it on the node; no plan says which GPUs",
    }
    pool = values["pool_tokens"]
    return FleetEngine(
        model_name=model or "?",
        engine=index,
        namespace=namespace or None,
        pod=name or None,
        instance=address or host_of(labels.get("instance", "")),
        job=labels.get("job") or None,
        node=node,
        kv_usage_fraction=values["kv_usage_fraction"],
        pool_tokens=None if pool is None else round(pool),
        unknown=unknown,
        **joined,
        **plan,
    )
