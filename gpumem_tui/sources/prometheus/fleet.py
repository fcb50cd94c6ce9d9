"""One fleet sample: the queries of `queries.py` run concurrently, then joined into a FleetSample.

The join follows reference/fleet.md 2.4: an engine's GPUs are those dcgm-exporter's series attribute to its
pod (found); on a node without pod labels (bare metal) a node's only engine is given the node's GPUs
(assumed); anything else is not joined, with the reason. A failed query leaves its fields unknown with the
error as the reason; when every query fails the source is down."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from gpumem_tui.sources.prometheus import gpumem_export
from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError, Result, Series, sorted_answers
from gpumem_tui.sources.prometheus.engine_facts import EngineFacts, Key, engine_key
from gpumem_tui.sources.prometheus.engine_series import SAID
from gpumem_tui.sources.prometheus.fleet_engines import Counts, Join, JoinIndex, engines_of
from gpumem_tui.sources.prometheus.fleet_nodes import Shape, Sums, as_bytes, shapes_of
from gpumem_tui.sources.prometheus.labels import (
    AUTO,
    LabelChoice,
    exporter_pods,
    node_of,
    projected,
    workload_of,
)
from gpumem_tui.sources.prometheus.model_gauges import model_gauges
from gpumem_tui.sources.prometheus.node_part import NodesKept, cards_of, counts_of, node_counts, node_part, sums_of
from gpumem_tui.sources.prometheus.queries import FINDING_WORDS, PART, Queries, merged
from gpumem_tui.sources.prometheus.query_table import TABLE, names
from gpumem_tui.sources.prometheus.read_rules import NodeLook, Stale
from gpumem_tui.sources.prometheus.records import (
    Coverage,
    FleetEngine,
    FleetGpu,
    FleetSample,
    NodeFinding,
)

EMPTY = Result()

FULL = names(lambda q: q.full)
"""The queries of the full read (every GPU one by one)."""
FROM_DCGM = frozenset(names(lambda q: q.source == "dcgm-exporter"))
"""The answers made of dcgm-exporter's series, read with the chosen node and pod labels."""
QUIET = names(lambda q: q.quiet)
"""Queries whose answers are mostly empty: `ask` sends those it is given as one request (docs/design/queries.md)."""


async def ask(
    client: PrometheusClient, promql: Mapping[str, str], at: float, *, part: bool = False
) -> tuple[dict[str, Result], dict[str, str]]:
    """Each named query run concurrently at `at`, the QUIET ones in one request: (answers, failures in one
    line each). Raises the first PrometheusError when none could be read, unless the queries are `part` of a
    read that others answer too (then each failure is said, as where some answered)."""
    import asyncio  # where a server is read: the simulated fleet's `build` loads no event loop

    quiet = {name: q for name, q in promql.items() if name in QUIET}
    if len(quiet) < 2:
        quiet = {}
    alone = [name for name in promql if name not in quiet]
    requests = [promql[name] for name in alone] + ([merged(quiet)] if quiet else [])
    answers = await asyncio.gather(*(client.query(q, at) for q in requests), return_exceptions=True)
    by_name = dict(zip(alone, answers, strict=False))
    if quiet and isinstance(answers[-1], PrometheusError) and answers[-1].kind == "query":
        # the server refused the merged request, maybe for one part it cannot run: each alone, so the rest answer
        again = await asyncio.gather(*(client.query(q, at) for q in quiet.values()), return_exceptions=True)
        by_name |= dict(zip(quiet, again, strict=True))
    elif quiet:
        by_name |= split(answers[-1], list(quiet))
    answers = [by_name[name] for name in promql]
    results, failures = sorted_answers(promql, answers, Result)
    if not results and failures and not part:
        raise next(a for a in answers if isinstance(a, PrometheusError))
    return results, failures


def split(answer: Result | BaseException, names: list[str]) -> dict[str, Result | BaseException]:
    """A merged request's answer as each part's own (the tag label taken off); a failure is each part's."""
    if not isinstance(answer, Result):
        return dict.fromkeys(names, answer)
    parts: dict[str, list[Series]] = {name: [] for name in names}
    for s in answer.series:
        labels = dict(s.labels)
        part = parts.get(labels.pop(PART, ""))
        if part is not None:
            part.append(Series(labels, s.value, s.timestamp))
    return {name: Result(series, list(answer.warnings)) for name, series in parts.items()}


async def ask_with_exporters(
    client: PrometheusClient, queries: Queries, promql: Mapping[str, str], at: float
) -> tuple[dict[str, Result], dict[str, str]]:
    """`ask`, and beside it the series of nodes that run gpumem-tui export (gpumem_export.read: one query
    first, the rest only where some node runs one)."""
    import asyncio

    # both run to their end before either's failure is raised: no request is left in flight
    asked, read = await asyncio.gather(
        ask(client, promql, at), gpumem_export.read(client, queries, at), return_exceptions=True
    )
    if isinstance(asked, BaseException):
        raise asked
    if isinstance(read, BaseException):
        raise read
    results, failures = asked
    more, more_failed = sorted_answers(read, read.values(), Result)
    return {**results, **more}, {**failures, **more_failed}


async def read_full(client: PrometheusClient, queries: Queries, at: float, stale: Stale) -> FleetSample:
    """Every GPU one by one (`fleet snapshot --full`, `fleet check --full`); `stale`: the judge's rule."""
    promql = {name: TABLE[name].promql(queries) for name in FULL}
    results, failures = await ask_with_exporters(client, queries, promql, at)
    return build(client.connection.url, at, results, failures, queries.matchers, queries.labels, stale=stale)


def project(results: Mapping[str, Result], choice: LabelChoice) -> dict[str, Result]:
    """dcgm-exporter's answers read with only the chosen node and pod labels (--node-label, --pod-label)."""
    if choice == AUTO:
        return dict(results)
    return {
        name: Result([Series(projected(s.labels, choice), s.value, s.timestamp) for s in r.series], r.warnings)
        if name in FROM_DCGM
        else r
        for name, r in results.items()
    }


def build(
    source: str,
    at: float,
    results: Mapping[str, Result],
    failures: Mapping[str, str],
    selector: str = "",
    choice: LabelChoice = AUTO,
    join_age_s: float = 0.0,
    slow: Slow | None = None,
    known: EngineFacts | None = None,
    looks: NodeLook | None = None,
    engine_keys: list[Key] | None = None,
    *,
    stale: Stale,
    kept: NodesKept | None = None,
    quiet: str | None = None,
) -> FleetSample:
    """The FleetSample of the query answers (pure: canned answers in, records out). `choice`: the node and pod
    labels (--node-label, --pod-label); `join_age_s`: how long ago `gpu_pods` (the join) and `node_gpus` were
    read, when the overview keeps them between refreshes; `slow`: what those give, when the caller keeps it too
    (`Slow.of` the same answers); `known`: what the engines take from `pools` and `engine_counters`, likewise
    (`EngineFacts.of` them); `looks`: the overview's look at each node (its `low`; the nodes to read one by one
    in `looks.needs`); `engine_keys`: `engine_key` of each series of `results["engines"]`, where the caller has
    them; `stale`: the judge's rule of when a node's data is stale; `kept`: what the last refresh made its nodes of,
    and made (node_part.py); `quiet`: engines_of's."""
    warnings = sorted({w for r in results.values() for w in r.warnings})
    unknown = {name: f"the query failed: {why}" for name, why in failures.items()}
    if slow is None:
        slow = Slow.of(results, choice)
    results = project(results, choice)
    gpus = gpus_of(results.get("gpu_memory", EMPTY).series, slow.identities)
    gpus = _with_instances(gpus, results.get("gpu_instances", EMPTY).series)
    counts, sums = _node_counts(results, slow, gpus)
    if ("gpu_memory" in results or sums is None) and not gpus and not counts:
        unknown["memory"] = "no dcgm-exporter series match the selector"
    join = Join(slow.index, counts, "gpu_pods" in results)
    engines = _engines(results, failures, join, known, engine_keys, quiet)
    if "engines" in results and "pools" in results and not engines:
        unknown["engines"] = f"no {SAID} series match the selector"
    shapes = slow.shapes if counts is slow.counts else None
    part = node_part(results, counts, sums, shapes, engines, looks, stale, kept)
    sample = FleetSample(
        source=source,
        evaluated_at=at,
        state="stale" if failures else "ok",
        error="; ".join(failures.values()) or None,
        warnings=warnings + part.warnings,
        selector=selector,
        nodes=part.nodes,
        gpus=gpus,
        engines=engines,
        pod_nodes={pod: node for pod, (node, _) in sorted(slow.index.held.items()) if node is not None},
        targets_down=[s.labels for s in results.get("targets_down", EMPTY).series],
        node_findings=_node_findings(results.get("node_findings", EMPTY).series),
        stale_nodes=part.stale,
        coverage=Coverage.of(part.nodes, engines),
        data_age_s=part.data_age_s,
        join_age_s=join_age_s,
        unknown=unknown,
        models={} if quiet is None else model_gauges(results, failures, engines, quiet),
    )
    told = gpumem_export.with_exporters(sample, results, failures, stale)
    if looks is not None and told is not sample:  # a node's own exporter added to the records: look again
        told = told.model_copy(update={"nodes": looks.again(told)})
    return told


def _node_counts(results: Mapping[str, Result], slow: Slow, gpus: list[FleetGpu]) -> tuple[Counts, Sums | None]:
    """The GPUs counted per node, and the memory summed per node where the node queries did not answer (canned
    answers without them: the nodes are the sums of their GPUs; None: node_part reads the node queries')."""
    if "node_memory" in results and "node_gpus" in results:
        return (slow.counts if slow.counts is not None else node_counts(results["node_gpus"].series)), None
    cards = cards_of(gpus)
    return counts_of(cards), sums_of(cards)


def _engines(
    results: Mapping[str, Result],
    failures: Mapping[str, str],
    join: Join,
    known: EngineFacts | None,
    engine_keys: list[Key] | None,
    quiet: str | None = None,
) -> list[FleetEngine]:
    """The engines of the engines' answers, joined to their GPUs (`quiet`: as build's)."""
    down = {(s.labels.get("job", ""), s.labels.get("instance", "")) for s in results.get("targets_down", EMPTY).series}
    return engines_of(
        results.get("engines", EMPTY).series,
        results.get("pools", EMPTY).series,
        results.get("preemptions", EMPTY).series,
        failures,
        {engine_key(s.labels): s.labels.get("sleep_state", "") for s in results.get("sleeping", EMPTY).series},
        down,
        join,
        results.get("waiting", EMPTY).series,
        results["engine_counters"].series if "engine_counters" in results else None,
        known,
        engine_keys,
        swapped=results.get("swapped", EMPTY).series,
        quiet=quiet,
    )


@dataclass(frozen=True)
class Slow:
    """What a sample takes from the slow facts (the join `gpu_pods`, the GPUs per node and card `node_gpus`),
    made once per read of them where a caller keeps them between refreshes (the overview's reader): at 1,000
    nodes that is 10^4 series gone over again each refresh for the same answer."""

    identities: list[GpuIdentity]
    """Every GPU and the pods holding it."""
    index: JoinIndex
    counts: Counts | None
    """`node_gpus` counted per node, card and field; None where it was not read."""

    @cached_property
    def shapes(self) -> dict[str, Shape] | None:
        """Each node's Shape, from `counts`."""
        return None if self.counts is None else shapes_of(self.counts)

    @classmethod
    def of(cls, results: Mapping[str, Result], choice: LabelChoice = AUTO) -> Slow:
        """From the answers as read (the exporter's own pods are found before the labels are projected)."""
        empty = Result()
        exporters = exporter_pods(s.labels for s in results.get("gpu_pods", empty).series)
        seen = project({n: r for n, r in results.items() if n in ("gpu_pods", "node_gpus")}, choice)
        identities = identities_of(seen.get("gpu_pods", empty).series, exporters)
        counts = node_counts(seen["node_gpus"].series) if "node_gpus" in seen else None
        return cls(identities, JoinIndex.of(identities), counts)


def _node_findings(series: list[Series]) -> list[NodeFinding]:
    """The findings of each node's newest scrape of its exporter (the values are sample times)."""
    newest: dict[str, float] = {}
    for s in series:
        node = node_of(s.labels)
        if node is not None and math.isfinite(s.value):
            newest[node] = max(s.value, newest.get(node, -math.inf))
    found: dict[tuple, NodeFinding] = {}
    for s in series:
        node = node_of(s.labels)
        if node not in newest or not s.labels.get("code") or not s.value >= newest[node] - 1:  # NaN: no time
            continue
        finding = NodeFinding(
            node=node,
            code=s.labels["code"],
            severity=s.labels.get("severity", ""),
            **{k: s.labels.get(k) or None for k in ("gpu", "pid", "endpoint", "model_name", *FINDING_WORDS)},
        )
        key = (node, finding.code, finding.severity, finding.gpu, finding.pid, finding.endpoint, finding.model_name)
        if key not in found or finding.title is not None:  # each finding comes with its words and without
            found[key] = finding
    return sorted(found.values(), key=lambda f: (f.node, f.code, f.gpu or "", f.endpoint or ""))


@dataclass(slots=True)
class GpuIdentity:
    """One GPU as the pod-to-GPU join (`gpu_pods`) names it, with the workloads that hold it. Not frozen: a
    frozen dataclass is made through object.__setattr__, and a slow read at 1,000 nodes makes 8,000 (read only,
    never changed)."""

    node: str
    uuid: str | None
    instance: str | None
    index: str | None
    pods: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.uuid or self.index or "?"


def identities_of(rows: list[Series], exporters: set[str] | None = None) -> list[GpuIdentity]:
    """Every GPU of `gpu_pods`, each once, in the order GPUs are listed (node, UUID, GPU instance).
    `exporters`: the exporter's own pods, found before the labels were projected (else from `rows`)."""
    if exporters is None:
        exporters = exporter_pods(s.labels for s in rows)
    pods: dict[tuple[str, str | None, str | None], set[str]] = {}
    index: dict[tuple[str, str | None, str | None], str | None] = {}
    for s in rows:
        labels = s.labels
        node = node_of(labels)
        if node is None:
            continue
        key = (node, labels.get("UUID"), labels.get("GPU_I_ID"))
        if key not in pods:
            pods[key], index[key] = set(), labels.get("gpu")
        workload = workload_of(labels, exporters)
        if workload is not None:
            pods[key].add("/".join(workload))
    ordered = sorted(pods, key=lambda k: (k[0], str(k[1]), str(k[2])))
    return [GpuIdentity(*key, index[key], tuple(sorted(pods[key]))) for key in ordered]


def gpus_of(memory: list[Series], identities: list[GpuIdentity]) -> list[FleetGpu]:
    """The GPUs of a per-GPU memory answer, each with the pods the join says hold it."""
    if not memory:
        return []
    held: dict[tuple, tuple[str, ...]] = {(gpu.node, gpu.uuid, gpu.instance): gpu.pods for gpu in identities}
    by_gpu: dict[tuple, dict[str, Series]] = defaultdict(dict)
    for s in memory:
        key = (node_of(s.labels), s.labels.get("UUID"), s.labels.get("GPU_I_ID"))
        by_gpu[key][s.labels.get("__name__", "")] = s
    gpus = []
    for key, fields in sorted(by_gpu.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        node, uuid, instance = key
        if node is None:
            continue
        labels = next(iter(fields.values())).labels
        unknown: dict[str, str] = {}
        used, free, reserved, total = _fb_figures(fields, unknown)
        gpus.append(
            FleetGpu(
                node=node,
                index=labels.get("gpu"),
                uuid=uuid,
                gpu_instance=instance,
                gpu_instance_profile=labels.get("GPU_I_PROFILE"),
                card=labels.get("modelName"),
                used_bytes=used,
                free_bytes=free,
                reserved_bytes=reserved,
                total_bytes=total,
                pods=list(held.get(key, ())),
                unknown=unknown,
            )
        )
    return gpus


def _fb_figures(fields: Mapping[str, Series], unknown: dict[str, str]) -> tuple[int | None, ...]:
    """A GPU's used, free, reserved and total bytes from its FB_* series by name (why each unknown one is, in
    `unknown`)."""

    def value(name: str) -> float | None:
        s = fields.get(f"DCGM_FI_DEV_FB_{name}")
        return None if s is None else s.value

    used = as_bytes(value("USED"), "FB_USED", unknown, "used_bytes")
    free = as_bytes(value("FREE"), "FB_FREE", unknown, "free_bytes")
    reserved = as_bytes(value("RESERVED"), "FB_RESERVED", unknown, "reserved_bytes")
    for field, name in (("used_bytes", "USED"), ("free_bytes", "FREE")):
        if value(name) is None:
            unknown[field] = f"no DCGM_FI_DEV_FB_{name} series"
    if value("RESERVED") is None:
        unknown["reserved_bytes"] = (
            "n/a: this dcgm-exporter exports no DCGM_FI_DEV_FB_RESERVED (its default list has it from 4.4.0); "
            "total is used + free"
        )
    total = None
    if used is None or free is None:
        unknown["total_bytes"] = "used or free is unknown"
    elif value("RESERVED") is not None and reserved is None:
        unknown["total_bytes"] = "reserved is unreadable"
    else:
        total = used + free + (reserved or 0)
    return used, free, reserved, total


MIG_NO_FB = (
    "no {field} series for this MIG GPU instance: some dcgm-exporter versions and GPUs export no FB field per "
    "instance (dcgm-exporter #380, #512); its memory is in its GPU's"
)


def _with_instances(gpus: list[FleetGpu], instances: list[Series]) -> list[FleetGpu]:
    """The GPUs, and each MIG GPU instance that reports no FB field, listed without memory and with the reason
    (never left out, never read as empty). One that reports an FB field is left to the GPUs read one by one."""
    known: set[tuple[str | None, str | None, str | None]] = {(g.node, g.uuid, g.gpu_instance) for g in gpus}
    known |= {
        (node_of(s.labels), s.labels.get("UUID"), s.labels.get("GPU_I_ID"))
        for s in instances
        if s.labels.get("__name__", "").startswith("DCGM_FI_DEV_FB_")
    }
    added = []
    for s in instances:
        node, instance = node_of(s.labels), s.labels.get("GPU_I_ID")
        key = (node, s.labels.get("UUID"), instance)
        if node is None or key in known:
            continue
        known.add(key)
        fields = {"used_bytes": "FB_USED", "free_bytes": "FB_FREE", "reserved_bytes": "FB_RESERVED"}
        unknown = {field: MIG_NO_FB.format(field=f"DCGM_FI_DEV_{name}") for field, name in fields.items()}
        unknown["total_bytes"] = "used or free is unknown"
        added.append(
            FleetGpu(
                node=node,
                index=s.labels.get("gpu"),
                uuid=s.labels.get("UUID"),
                gpu_instance=instance,
                gpu_instance_profile=s.labels.get("GPU_I_PROFILE"),
                card=s.labels.get("modelName"),
                unknown=unknown,
            )
        )
    if not added:
        return gpus
    return sorted([*gpus, *added], key=lambda g: (g.node, str(g.uuid), str(g.gpu_instance)))
