"""The fleet's engines: one per `model_name` + `engine` of a scrape target, from the gauges, the pools
(vLLM's `cache_config_info`), preemptions and sleep, each joined to its GPUs (reference/fleet.md 2.4).

An engine's GPUs are those dcgm-exporter's series attribute to its pod (found); on a node without pod labels
(bare metal) a node's only engine is given the node's unallocated GPUs (assumed); anything else is not
joined, with the reason. Each engine's fields are gathered, silenced (its target down) and joined as plain
values, then made a FleetEngine once: a refresh of 1,000 engines copies no record."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpumem_tui.records import updated
from gpumem_tui.sources.prometheus.client import Series
from gpumem_tui.sources.prometheus.engine_facts import EngineFacts, Key, Plain, engine_key
from gpumem_tui.sources.prometheus.engine_layout import Place, places
from gpumem_tui.sources.prometheus.engine_series import NAMES, kind_of, missing
from gpumem_tui.sources.prometheus.labels import host_of
from gpumem_tui.sources.prometheus.records import QUIET_FIELDS, FleetEngine, Joined

GAUGES = ("kv_usage_fraction", "requests_running", "requests_waiting", "preemptions_per_min")
DOWN = "its scrape target is down (up == 0): the last values are not the engine's now"
QUIET: dict[str, Any] = {}
"""The gauges of a row whose engine the refresh read none of (`quiet`): its record is made once and kept."""
NONE: frozenset[str] = frozenset()
INF = math.inf

Held = dict[str, tuple[str | None, int]]
"""`namespace/pod` -> (its node, the GPUs dcgm-exporter attributes to it)."""
Counts = dict[str, dict[str, dict[str, int]]]
"""node -> card model -> dcgm-exporter field (`USED`, `FREE`, `RESERVED`) -> GPUs that report it."""


@dataclass(frozen=True)
class JoinIndex:
    """The pod-to-GPU join (`gpu_pods`, a slow fact) indexed for joining engines: made once per read of it."""

    held: Held
    by_pod: dict[str, list[str]]
    """`namespace/pod` -> the names (UUIDs, else indexes) of the GPUs it holds."""
    unheld: dict[str, list[str]]
    """node -> the names of its GPUs no pod holds."""
    allocated: dict[str | None, int]
    """node -> GPUs pods hold on it."""
    indices: dict[str, int]
    """A GPU's name -> its index (dcgm-exporter's `gpu` label), where the label is one."""

    @classmethod
    def of(cls, identities: Iterable[Any]) -> JoinIndex:
        """From GpuIdentity's (fleet.py: node, pods, name)."""
        held: Held = {}
        by_pod: dict[str, list[str]] = defaultdict(list)
        unheld: dict[str, list[str]] = defaultdict(list)
        indices: dict[str, int] = {}
        for gpu in identities:
            if gpu.index is not None and gpu.index.isdigit():
                indices[gpu.name] = int(gpu.index)
            if not gpu.pods:
                unheld[gpu.node].append(gpu.name)
            for pod in gpu.pods:
                node, count = held.get(pod, (gpu.node, 0))
                held[pod] = (node, count + 1)
                by_pod[pod].append(gpu.name)
        allocated: dict[str | None, int] = defaultdict(int)
        for node, count in held.values():
            allocated[node] += count
        return cls(held, dict(by_pod), dict(unheld), dict(allocated), indices)


@dataclass(frozen=True)
class Join:
    """What joining engines reads: the join's index, GPUs per node (`counts`), whether the pod-to-GPU query
    was read. How long ago it was read is the sample's (`join_age_s`), said once, not in each engine's reason."""

    index: JoinIndex
    counts: Counts
    pods_read: bool


def said(value: float) -> str:
    """A value as Prometheus writes it: `NaN`, `+Inf`, `-1`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return f"{value:g}"


def _number(value: float, field: str, unknown: dict[str, str]) -> float | None:
    if not math.isfinite(value) or value < 0:
        unknown[field] = f"the engine reported {said(value)}: no reading"
        return None
    return value


def engines_of(
    usage: list[Series],
    pools: list[Series],
    preemptions: list[Series],
    failures: Mapping[str, str],
    asleep: Mapping[tuple[str | None, ...], str],
    down: set[tuple[str, str]],
    join: Join,
    waiting: Iterable[Series] = (),
    counters: list[Series] | None = None,
    known: EngineFacts | None = None,
    usage_keys: list[Key] | None = None,
    swapped: Iterable[Series] = (),
    quiet: str | None = None,
) -> list[FleetEngine]:
    """Every engine the gauges or the pools name, sorted by model, namespace, pod, instance and engine.
    `waiting`: requests waiting per engine where `usage` does not carry them (the overview asks only where
    some wait); `counters`: which engines export waiting and a preemption rate (`Queries.engine_counters`),
    so an engine missing from `waiting` or `preemptions` reads as zero there (None: as unknown); `known`: what
    the pools and counters give, where the caller keeps it (made of `pools` and `counters` otherwise);
    `usage_keys`: `engine_key` of each of `usage`, where the caller has them; `swapped`: requests swapped per
    engine where not 0; `quiet`: why an engine `usage` leaves out has no KV usage or requests running, where
    it names those over a fraction (`Queries.over`)."""
    # what the caller's EngineFacts keep for this join: the records, the layout and the order made (none: anew)
    kept = None if known is None else known.made_for((join.index, join.counts, join.pods_read))
    if known is None:
        known = EngineFacts.of(pools, counters, failures)
    keys = usage_keys if usage_keys is not None else [engine_key(s.labels) for s in usage]
    waits = {engine_key(s.labels): s for s in waiting}
    rates = {engine_key(s.labels): s.value for s in preemptions}
    queued = {engine_key(s.labels): s.value for s in swapped}
    made = kept.setdefault("records", {}) if kept is not None else {}
    # a quiet engine's record is the same while nothing of it is read: made once, the very one each refresh
    still = quiet is not None and "waiting" not in failures and "preemptions" not in failures
    rows: list[Row] = []  # the engines `_made` makes: not plain, or no record made yet for this join
    engines: list[FleetEngine | None] = []  # in the order found; None: one of `rows`
    found = places(usage, keys, waits, known, kept)
    for k, fact, at, kv, running, queue in found:
        # a key's hash is 14 labels': looked up only where a quiet query names some engine
        rate, held, sleep = rates.get(k) if rates else None, queued.get(k) if queued else None, None
        if asleep:
            sleep = asleep.get(k)
        waited = waits.get(k) if waits else None
        row: Row | None = None
        if fact is not None and kv >= 0 and running >= 0:
            wait = waited.value if waited is not None else usage[queue].value if queue >= 0 else None
            gauges = _plain(fact, usage[kv].value, usage[running].value, wait, rate, held, sleep, failures, down)
            template = None if gauges is None else made.get(fact)  # an engine with a pod's record, kept
            if template is not None and gauges is not None:
                engines.append(_refreshed(template, gauges))
                continue
            row = None if gauges is None else (fact, fact.static, gauges)
        elif still and fact is not None and kv < 0 and _untouched(fact, waited, rate, held, sleep, down):
            template = made.get((QUIET_FIELDS, fact))
            if template is not None:
                engines.append(template)
                continue
            row = (fact, fact.static, QUIET)
        if row is None:
            series = {name: usage[i] for name, i in at.items()}
            if waited is not None:
                series[NAMES.waiting[0]] = waited
            row = _row(k, series, (rate, held), failures, sleep, down, known, quiet)
        rows.append(row)
        engines.append(None)
    records = iter(_made(rows, join, made, quiet) if rows else ())
    done = [next(records) if e is None else e for e in engines]
    return [done[i] for i in _order(done, found, kept)]


def _untouched(
    fact: Plain,
    waited: Series | None,
    rate: float | None,
    swapped: float | None,
    asleep: str | None,
    down: set[tuple[str, str]],
) -> bool:
    """Whether a refresh by exception read nothing of this engine: no request waiting or preempted (it exports
    both counters, so that is 0), none swapped, awake, its target up."""
    if waited is not None or rate is not None or swapped is not None or asleep:
        return False
    return fact.waiting_zero and fact.rate_zero and not (down and fact.target in down)


def _quiet(why: str) -> dict[str, Any]:
    """The fields of an engine `_untouched` that changes from refresh to refresh, as a quiet refresh has them."""
    return {
        "kv_usage_fraction": None,
        "requests_running": None,
        "requests_waiting": 0.0,
        "preemptions_per_min": 0.0,
        "requests_swapped": None,
        "sleep_state": None,
        "unknown": dict.fromkeys(QUIET_FIELDS, why),
    }


def _order(engines: list[FleetEngine], found: list[Place], kept: dict[Any, Any] | None) -> list[int]:
    """The engines' positions (as found) in their order: by model, namespace, pod, instance and engine, else as
    found. The last refresh's where they were found in the same layout (`found`, compared by identity): those
    fields are the engine's key's and pool's, so the same there."""
    last = None if kept is None else kept.get("order")
    if last is not None and last[0] is found:
        return last[1]
    keys = [(e.model_name, e.namespace or "", e.pod or "", e.instance or "", e.engine or "") for e in engines]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    if kept is not None:
        kept["order"] = (found, order)
    return order


Row = tuple[Key | Plain, dict[str, Any], dict[str, Any]]
"""An engine: its key (its Plain facts where it took the short path: hashed by identity, not 14 labels), the
fields its pool gives, the fields that change each refresh (`_gauges`)."""


def _row(
    k: Key,
    series: dict[str, Series],
    counts: tuple[float | None, float | None],
    failures: Mapping[str, str],
    asleep: str | None,
    down: set[tuple[str, str]],
    known: EngineFacts,
    quiet: str | None = None,
) -> Row:
    """One engine's fields (`counts`: its preemption rate and requests swapped; `quiet`: as engines_of's); a
    target that is down has no gauge reading, with the reason."""
    pool = known.pools.get(k)
    static = pool if pool is not None else known.fields(k, kind_of(series))
    gauges = _gauges(static, k, series, counts, failures, asleep, known, quiet)
    if (static["job"] or "", static["instance"] or "") in down:
        gauges.update(dict.fromkeys(GAUGES))
        gauges["unknown"].update(dict.fromkeys(GAUGES, DOWN))
    return k, static, gauges


def _made(rows: list[Row], join: Join, made: dict[Any, FleetEngine], quiet: str | None) -> list[FleetEngine]:
    """The engines of the rows, joined; `made`: the records made for this join (where the caller's EngineFacts
    keep them: reused with the refresh's gauges; a QUIET row's as they are), by engine; `quiet`: as
    engines_of's."""
    per_node: dict[str | None, int] = defaultdict(int)  # engines without a pod on each host
    for _, static, _ in rows:
        if static["pod"] is None:
            per_node[host_of(static["instance"] or "")] += 1
    engines = []
    for k, static, gauges in rows:
        # an engine with a pod is joined by its key alone; one without, also by how many share its host
        slot: object = k if static["pod"] is not None else (k, per_node[host_of(static["instance"] or "")])
        still = gauges is QUIET
        if still:
            read, slot, gauges = made.get(slot), (QUIET_FIELDS, slot), _quiet(quiet or "")
            if slot not in made and read is not None:  # the record of a refresh that read it, as a quiet one
                made[slot] = updated(read, gauges)
        template = made.get(slot)
        if template is None:  # its fields that the gauges do not change, made once
            made[slot] = template = FleetEngine(**{**static, **gauges}, **_joined(static, join, per_node))
            gauges = {}  # the template's own
        engines.append(template if still else _refreshed(template, gauges))
    return engines


def _refreshed(template: FleetEngine, gauges: dict[str, Any]) -> FleetEngine:
    """`template` with the refresh's `gauges`."""
    return updated(template, gauges) if gauges else template


def _gauges(
    static: dict[str, Any],
    k: Key,
    series: dict[str, Series],
    counts: tuple[float | None, float | None],
    failures: Mapping[str, str],
    asleep: str | None,
    known: EngineFacts,
    quiet: str | None = None,
) -> dict[str, Any]:
    """One engine's fields that change from refresh to refresh while its pool and join stay (the GAUGES, its
    sleep state, `unknown`), from its series and `static`, what its pool gives (FleetEngine's names; `unknown`
    says why a field is None, its pool's fields included). `counts`: its preemption rate and requests swapped,
    where the quiet queries name it; `quiet`: why a KV usage or requests running not read is not (engines_of)."""
    (rate, swapped), zero = counts, known.zeros
    exported = zero.by_engine.get(k, NONE)
    unknown: dict[str, str] = {}
    said = missing(static["kind"])
    kv = _first(series, NAMES.kv_usage)
    if kv is None:
        unknown["kv_usage_fraction"] = quiet or said.kv
    running = _first(series, NAMES.running)
    if running is None:
        unknown["requests_running"] = _unrun(quiet, kv is not None, failures, said.running)
    waiting = _first(series, NAMES.waiting)
    queue = {"requests_running": None if running is None else _number(running.value, "requests_running", unknown)}
    if waiting is not None:
        queue["requests_waiting"] = _number(waiting.value, "requests_waiting", unknown)
    elif "waiting" in failures:
        queue["requests_waiting"], unknown["requests_waiting"] = None, failures["waiting"]
    else:
        queue["requests_waiting"] = zero.value(k, "requests_waiting", unknown, said.waiting, exported)
    pooled = k in known.pools
    if not pooled:  # every pool field unknown, why said here as it was always said
        unknown.update(static["unknown"])
    if rate is None and "preemptions" not in failures:
        rate = zero.value(k, "preemptions_per_min", unknown, said.rate, exported)
    elif rate is None:
        unknown["preemptions_per_min"] = failures["preemptions"]
    if pooled:
        unknown.update(static["unknown"])
    return {
        "kv_usage_fraction": None if kv is None else _number(kv.value, "kv_usage_fraction", unknown),
        **queue,
        "preemptions_per_min": None if rate is None else _number(rate, "preemptions_per_min", unknown),
        "requests_swapped": None if swapped is None else _number(swapped, "requests_swapped", unknown),
        "sleep_state": asleep or None,
        "unknown": unknown,
    }


def _unrun(quiet: str | None, read: bool, failures: Mapping[str, str], missing: str) -> str:
    """Why an engine has no requests running: its kind's missing series; by exception (`quiet`), not read where
    its KV usage was not, else (over the fraction, its running asked after its usage) that query's failure."""
    if quiet is None:
        return missing
    if not read:
        return quiet
    return failures.get("engine_running", missing)


def _plain(
    fact: Plain,
    kv: float,
    running: float,
    waiting: float | None,
    rate: float | None,
    swapped: float | None,
    asleep: str | None,
    failures: Mapping[str, str],
    down: set[tuple[str, str]],
) -> dict[str, Any] | None:
    """`_gauges` of a plain engine, made directly: its target up, each reading a finite number >= 0, or a
    missing waiting or preemption series that it exports (so 0) with no failure. None for any other: `_row`
    words it (tests/sources/prometheus/test_plain_engines.py holds the two equal)."""
    if down and fact.target in down:
        return None
    if waiting is None:
        if not fact.waiting_zero or "waiting" in failures:
            return None
        waiting = 0.0
    if rate is None:
        if not fact.rate_zero or "preemptions" in failures:
            return None
        rate = 0.0
    if not (0 <= kv < INF and 0 <= running < INF and 0 <= waiting < INF and 0 <= rate < INF):  # NaN fails too
        return None
    if swapped is not None and not 0 <= swapped < INF:
        return None
    return {
        "kv_usage_fraction": kv,
        "requests_running": running,
        "requests_waiting": waiting,
        "preemptions_per_min": rate,
        "requests_swapped": swapped,
        "sleep_state": asleep or None,
        "unknown": {},
    }


def _first(series: Mapping[str, Series], names: tuple[str, ...]) -> Series | None:
    """The engine's series of the first of these names it has (a newer name before an older)."""
    for name in names:
        found = series.get(name)
        if found is not None:
            return found
    return None


def _gpu_count(cards: Mapping[str, Mapping[str, int]]) -> int:
    return sum(max(fields.values(), default=0) for fields in cards.values())


def _joined(row: dict[str, Any], join: Join, per_node: Mapping[str | None, int]) -> dict[str, Any]:
    index = join.index
    if row["pod"] is not None:
        workload = f"{row['namespace'] or ''}/{row['pod']}"
        node, count = index.held.get(workload, (None, 0))
        if count:
            why = f"dcgm-exporter attributes {count} GPU(s) to pod {workload}"
            return _join("found", why, node, index.by_pod.get(workload, ()), count, index.indices)
        why = (
            "the pod-to-GPU query failed"
            if not join.pods_read
            else f"no dcgm-exporter series carries pod {workload} (dcgm-exporter not in Kubernetes mode, "
            "or the GPUs were not allocated through the device plugin)"
        )
        return _join("not joined", why)
    node = host_of(row["instance"] or "")
    if node is None:
        return _join("not joined", "the engine's series name no pod and no node")
    if node not in join.counts:
        return _join("not joined", f"no dcgm-exporter series for node {node}", node)
    if per_node[node] > 1:
        return _join(
            "not joined", f"{per_node[node]} engines on node {node}, and no pod label says which GPUs each uses", node
        )
    free = max(0, _gpu_count(join.counts[node]) - index.allocated.get(node, 0))
    why = f"the only engine on node {node} (no pod labels): all {free} of its unallocated GPUs assumed"
    return _join("assumed", why, node, index.unheld.get(node, ()), free, index.indices)


def _join(
    joined: Joined,
    why: str,
    node: str | None = None,
    gpus: Iterable[str] = (),
    count: int | None = None,
    indices: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """A FleetEngine's join fields: how it was joined to its node's GPUs (with their indices where `indices`
    has each), or why not."""
    names = list(gpus)
    at = [indices[g] for g in names] if indices and all(g in indices for g in names) else []
    return {"node": node, "gpus": names, "gpu_indices": at, "gpu_count": count, "joined": joined, "join_reason": why}
