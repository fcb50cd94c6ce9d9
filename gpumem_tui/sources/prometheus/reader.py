"""The fleet read refresh after refresh: one FleetReader lives as long as the fleet screen's worker (`fleet
check` makes one read), so what changes slowly is read once and kept.

Each refresh (the overview) asks only for figures aggregated per node on the server: memory summed per node,
the least free GPU per node and card, how many GPUs are under the headroom fraction (a comparison with a
constant per card, the `look` share of the card's total, computed here), data ages, engines, preemptions,
engines asleep, the node exporters' findings, targets down, and which engines' pools changed since they were
read (empty while none did: then the pools read with the slow facts are kept; else they are read again). Then,
in a second small query narrowed to them by name, the GPUs one by one of the nodes that need a look: a reading
that is missing or not a number, a card whose total is unknown or differs between its GPUs, GPUs under the
fraction that the engines' gpu_memory_utilization does not explain (headroom.py), or a model's engines holding
some of the node's GPUs but not all, or a MIG instance a pod holds (a model's memory used is then the sum of
its GPUs or instances; elsewhere its nodes' sums, fleet_plans.py). A node whose GPUs are under the fraction as
planned is counted (`FleetNode.low`), never read GPU by GPU. No per-GPU arithmetic runs on the server.

The slow facts (GPUs per node, card and field; which pod holds which GPU, the join; each card's total; the
nodes seen within the hour; the engines' pools) are read again every FACTS_EVERY_S, when the set of reporting
nodes is not the one they were read with or a node's memory in all (used + free + reserved: a GPU came or
went) changed, or when a refresh is evaluated before them; the sample says their age (`join_age_s`) and so
does each engine's join reason. When the server has the recording rules of `gpumem-tui fleet rules`, the
per-node figures are read from them (`node_figures_from`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

from gpumem_tui.sources.prometheus.card_totals import card_totals, low_bounds
from gpumem_tui.sources.prometheus.client import PrometheusClient, Result
from gpumem_tui.sources.prometheus.engine_facts import EngineFacts, Key, engine_key
from gpumem_tui.sources.prometheus.first_read import covers, first_answers
from gpumem_tui.sources.prometheus.fleet import (
    GpuIdentity,
    Slow,
    ask,
    ask_with_exporters,
    build,
    gpus_of,
    identities_of,
    project,
    read_full,
)
from gpumem_tui.sources.prometheus.gc_pause import paused_gc, roomy
from gpumem_tui.sources.prometheus.labels import node_of
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.read_rules import ReadRules
from gpumem_tui.sources.prometheus.records import FleetGpu, FleetSample

FACTS_EVERY_S = 300.0
"""How often the slow facts are read again (reference/fleet.md 0: pod-to-GPU attribution every 5 min)."""
FAST = (
    "node_memory",
    "node_least_free",
    "nodes_age",
    "engines",
    "waiting",
    "sleeping",
    "preemptions",
    "node_findings",
    "targets_down",
)
FACTS = (
    "node_gpus",
    "node_reserved",
    "gpu_pods",
    "gpu_instances",
    "nodes_seen",
    "exporters_seen",
    "card_totals",
    "rules_present",
    "pools",
    "engine_counters",
)
POOLS = ("pools", "engine_counters")
"""The facts about engines read again when an engine came, went or restarted: its pool and which of its
counters it exports (an engine missing from `waiting`/`preemptions` reads as zero only if it does)."""
GPU_CHANGE_MIB = 1024.0
"""A node's used + free + reserved that moves by more than this (1 GiB, under the smallest MIG instance's
memory) means a GPU came or went; less is rounding, not worth a slow read."""
NO_ANSWER = Result()


@dataclass(frozen=True)
class Facts:
    at: float
    results: dict[str, Result]
    reporting: dict[str, float | None]
    """The nodes that reported when the facts were read, each with its used + free + reserved MiB (None:
    unknown): a GPU that came or went changes it."""
    slow: Slow
    """What the samples take from the facts (the join, GPUs per node and card), made once with them."""
    pools_at: float
    """When `results["pools"]` was read: with the facts, or again when a refresh found the pools changed."""
    counted: frozenset[Key] = frozenset()
    """The engines the gauges named when `results["engine_counters"]` was read: one they name that is not here
    came since (with no pool that changed to say so), and the counters are asked again."""

    @cached_property
    def engines(self) -> EngineFacts:
        """What the engines take from the pools and counters kept (made once, with them)."""
        counters = self.results.get("engine_counters")
        return EngineFacts.of(self.results["pools"].series, None if counters is None else counters.series, {})

    @property
    def identities(self) -> list[GpuIdentity]:
        """Every GPU and the pods holding it (the join), as read from `gpu_pods`."""
        return self.slow.identities

    @property
    def rules(self) -> bool:
        """Whether the server has every `gpumem:*` series of `gpumem-tui fleet rules`."""
        return covers(self.results["rules_present"])


class FleetReader:
    """Reads the fleet at each refresh; keeps the slow facts between refreshes. With `queries.look` None it
    makes the full read (every GPU one by one) each time. `rules`: the judge's, handed in by the caller."""

    def __init__(self, queries: Queries, rules: ReadRules, facts_every_s: float = FACTS_EVERY_S) -> None:
        self.queries, self.read_rules, self.facts_every_s = queries, rules, facts_every_s
        self.facts: Facts | None = None
        roomy()  # a reader lives across refreshes: each keeps its sample's 10^5 objects until the next
        self.rules: bool | None = None
        """Whether the server has the recording rules' series (None: not asked yet)."""
        self.keyed: tuple[Result, list[Key]] | None = None
        """The gauges' answer last keyed, with `engine_key` of each of its series: asked twice a refresh."""

    def _keys(self, results: dict[str, Result]) -> list[Key]:
        """`engine_key` of each series of the gauges' answer (`engines`), in order."""
        answer = results.get("engines", NO_ANSWER)
        if self.keyed is None or self.keyed[0] is not answer:
            self.keyed = (answer, [engine_key(s.labels) for s in answer.series])
        return self.keyed[1]

    def _named(self, results: dict[str, Result]) -> frozenset[Key]:
        """The engines the refresh's gauges (`engines`) name."""
        return frozenset(self._keys(results))

    async def read(self, client: PrometheusClient, at: float) -> FleetSample:
        """One sample at `at`. Raises PrometheusError when no query could be read."""
        q, url = self.queries, client.connection.url
        if q.look is None:
            return await read_full(client, q, at, self.read_rules.stale)
        look = q.look
        facts = self.facts
        due = facts is None or not facts.at <= at < facts.at + self.facts_every_s
        if facts is None and self.rules is None:  # the first read: each query as soon as it can go (first_read.py)
            names = (*FAST, *FACTS)
            results, failures, self.rules = await first_answers(client, q, at, names, lambda t: low_bounds(t, look))
            q = replace(q, rules=self.rules)
            promql = {name: getattr(q, name) for name in names}
        else:
            q = replace(q, rules=bool(self.rules))
            promql = {name: getattr(q, name) for name in FAST}
            if facts is not None and (bounds := low_bounds(facts.results["card_totals"], look)):
                promql["node_low"] = q.node_low(bounds)
            if due:
                promql |= {name: getattr(q, name) for name in FACTS}
            elif facts is not None and at < facts.pools_at:
                promql |= {name: getattr(q, name) for name in POOLS}  # kept ones newer than `at`: see pools_changed
            elif facts is not None:
                promql["pools_changed"] = q.pools_changed(at - facts.pools_at)
                if facts.engines.zeros.pending:  # a rate the full read may have now: the counters alone again
                    promql["engine_counters"] = q.engine_counters
            results, failures = await ask_with_exporters(client, q, promql, at)
            if facts is not None and "pools" not in promql and "engine_counters" in promql:
                facts = self.facts = _counters_again(facts, results, failures, self._named(results))
        seen = project(results, q.labels)  # what the reader itself reads: the chosen node and pod labels
        reporting = _reporting(seen)
        if due or (facts is not None and reporting is not None and _changed(facts.reporting, reporting)):
            if not due:  # the nodes changed since the facts were read: read them again now
                more, more_failed = await ask(client, {name: getattr(q, name) for name in FACTS}, at)
                results, failures = {**results, **more}, {**failures, **more_failed}
                seen = project(results, q.labels)
            if all(name in results for name in FACTS):
                slow = {n: results[n] for n in FACTS}
                facts = self.facts = Facts(at, slow, reporting or {}, Slow.of(slow, q.labels), at, self._named(results))
                self.rules = facts.rules
        again = {}
        first = facts is not None and "node_low" not in results and "node_low" not in failures
        if first and facts is not None and (bounds := low_bounds(facts.results["card_totals"], look)):  # just read
            again["node_low"] = q.node_low(bounds)
        changed = results.get("pools_changed")
        if "pools_changed" in promql and "pools" not in results and (changed is None or changed.series):
            again |= {name: getattr(q, name) for name in POOLS}  # an engine came, went or restarted (or unknown)
        elif facts is not None and "engine_counters" not in promql and self._named(results) - facts.counted:
            again["engine_counters"] = q.engine_counters  # an engine came that no pool names: its counters
        if again:
            more, more_failed = await ask(client, again, at)
            results, failures = {**results, **more}, {**failures, **more_failed}
            seen = project(results, q.labels)
            if facts is not None and "pools" in more:
                read = {name: more[name] for name in POOLS if name in more}
                facts = self.facts = replace(
                    facts, results={**facts.results, **read}, pools_at=at, counted=self._named(results)
                )
            elif facts is not None and "engine_counters" in again:
                facts = self.facts = _counters_again(facts, results, failures, self._named(results))
        if "pools" in results:  # read in this refresh (again, or with the facts): whatever the change query
            failures.pop("pools_changed", None)  # could not say, the pools were read now
        kept = {} if facts is None else {n: r for n, r in facts.results.items() if n not in results}
        for name in POOLS:  # read again and failed: the engines' fields say why, never the old answer
            if name in failures:
                kept.pop(name, None)
        age = 0.0 if facts is None else at - facts.at
        identities = None if facts is None else facts.identities
        totals = {} if facts is None else card_totals(facts.results["card_totals"])
        looker = self.read_rules.looks(seen, totals, identities or (), look)
        with paused_gc():
            sample = build(
                url,
                at,
                {**kept, **results},
                failures,
                q.matchers,
                q.labels,
                join_age_s=age,
                slow=_kept_slow(facts, results, at),
                known=_kept_engines(facts, results, failures),
                looks=looker,
                engine_keys=self._keys(results) if "engines" in results else None,
                stale=self.read_rules.stale,
            )
            sample = sample.model_copy(update={"node_figures_from": "recording rules" if q.rules else "raw series"})
            nodes, looks = sample.nodes, looker.needs
        gpus: list[FleetGpu] = []
        if looks:
            more, more_failed = await ask(client, {"gpu_memory": q.gpu_detail(looks)}, at)
            failures = {**failures, **more_failed}
            if identities is None:
                identities = identities_of(seen.get("gpu_pods", Result()).series)
            memory = project(more, q.labels).get("gpu_memory", Result()).series
            gpus = looker.kept(gpus_of(memory, identities), sample, identities)
            if more_failed:
                stale = self.read_rules.stale
                return build(
                    url, at, {**kept, **results}, failures, q.matchers, q.labels, join_age_s=age, stale=stale
                ).model_copy(update={"nodes": nodes, "node_figures_from": sample.node_figures_from})
        return sample.model_copy(update={"nodes": nodes, "gpus": _with_listed(gpus, sample.gpus)})


def _counters_again(facts: Facts, results: dict[str, Result], failures: dict[str, str], named: frozenset[Key]) -> Facts:
    """The facts with the engine counters read again alone (some engine's preemption rate was pending, or an
    engine came that no pool names); where that read failed, the ones kept, which still say which engines read
    as zero (the answers and failures lose it either way: the sample is built on the facts'); `named`: the
    engines the gauges name now."""
    failures.pop("engine_counters", None)
    counters = results.pop("engine_counters", None)
    if counters is None:
        return facts
    return replace(facts, results={**facts.results, "engine_counters": counters}, counted=named)


def _kept_slow(facts: Facts | None, results: dict[str, Result], at: float) -> Slow | None:
    """The facts' Slow where the sample is built on those facts (None: build reads the answers as they are,
    as where a slow read failed in part and some of its answers are newer than the facts)."""
    if facts is None or (facts.at != at and {"gpu_pods", "node_gpus"} & results.keys()):
        return None
    return facts.slow


def _kept_engines(facts: Facts | None, results: dict[str, Result], failures: dict[str, str]) -> EngineFacts | None:
    """The facts' EngineFacts where the sample is built on the pools and counters they were made of (None: the
    pools read for an earlier moment, or a read of them that failed: build makes its own)."""
    if facts is None:
        return None
    for name in POOLS:
        kept = facts.results.get(name)
        if name in failures or results.get(name, kept) is not kept:
            return None
    return facts.engines


def _with_listed(read: list[FleetGpu], listed: list[FleetGpu]) -> list[FleetGpu]:
    """The GPUs read one by one here, and those the sample lists without that read: a node's own
    gpumem-tui export's GPUs, MIG instances that report no memory."""
    keys = {(g.node, g.uuid, g.gpu_instance) for g in read}
    more = [g for g in listed if (g.node, g.uuid, g.gpu_instance) not in keys]
    return sorted([*read, *more], key=lambda g: (g.node, str(g.uuid), str(g.gpu_instance)))


def _reporting(results: dict[str, Result]) -> dict[str, float | None] | None:
    """The nodes that report now, each with its used + free + reserved MiB, which stays the same while its
    GPUs do (None: a field is not a number; None for all when the queries that say so failed)."""
    if "node_memory" not in results or "nodes_age" not in results:
        return None
    found: dict[str, float | None] = {}
    for s in results["nodes_age"].series:
        if (node := node_of(s.labels)) is not None:
            found.setdefault(node, 0.0)
    for s in results["node_memory"].series:
        if (node := node_of(s.labels)) is not None:
            total = found.get(node, 0.0)
            found[node] = None if total is None or not math.isfinite(s.value) else total + s.value
    return found


def _changed(then: dict[str, float | None], now: dict[str, float | None]) -> bool:
    """Whether the reporting nodes differ, or a node's memory in all moved by more than GPU_CHANGE_MIB or
    became (or stopped being) unknown."""
    if then.keys() != now.keys():
        return True
    for node, total in now.items():
        before = then[node]
        if (before is None) != (total is None) or (
            before is not None and total is not None and abs(total - before) > GPU_CHANGE_MIB
        ):
            return True
    return False
