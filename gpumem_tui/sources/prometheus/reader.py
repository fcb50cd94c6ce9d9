"""The fleet read refresh after refresh: one FleetReader lives as long as the fleet screen's worker (`fleet
check` makes one read), so what changes slowly is read once and kept.

Each refresh (the overview) asks the queries the table reads each refresh, figures aggregated per node on the
server, then the GPUs one by one of the nodes that need a look, in one more query narrowed to them by name.
The slow facts are read every FACTS_EVERY_S, or again when the reporting nodes or their memory in all changed;
the engines' pools again when one came, went or restarted. What is read when, and why: docs/design/queries.md."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property, partial

from gpumem_tui.sources.prometheus.card_totals import card_totals, low_bounds
from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError, Result, Series
from gpumem_tui.sources.prometheus.engine_facts import EngineFacts, Key, engine_key
from gpumem_tui.sources.prometheus.first_read import LATER, FirstRead, covers, first_answers, first_look
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
from gpumem_tui.sources.prometheus.held_back import Moment, moment
from gpumem_tui.sources.prometheus.kept_recorded import KEPT, KeptRecorded
from gpumem_tui.sources.prometheus.label_memo import LabelMemo
from gpumem_tui.sources.prometheus.labels import node_of
from gpumem_tui.sources.prometheus.model_gauges import quiet_why
from gpumem_tui.sources.prometheus.node_part import NodesKept
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.query_table import TABLE, names
from gpumem_tui.sources.prometheus.read_rules import NodeLook, ReadRules, Totals
from gpumem_tui.sources.prometheus.records import FleetGpu, FleetSample, NodeFigures

FACTS_EVERY_S = 300.0
"""How often the slow facts are read again (reference/fleet.md 0: pod-to-GPU attribution every 5 min)."""
FAST = names(lambda q: q.overview == "refresh")
FACTS = names(lambda q: q.overview in ("facts", "pools"))
POOLS = names(lambda q: q.overview == "pools")
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

    @cached_property
    def totals(self) -> Totals:
        """The cards' totals (`card_totals`), made once with the facts."""
        return card_totals(self.results["card_totals"])

    @property
    def identities(self) -> list[GpuIdentity]:
        """Every GPU and the pods holding it (the join), as read from `gpu_pods`."""
        return self.slow.identities

    @property
    def rules(self) -> bool:
        """Whether the server has every `gpumem:*` series of `gpumem-tui fleet rules`."""
        return covers(self.results["rules_present"])


@dataclass
class _Round:
    """One refresh's queries and answers as they come: what it asked, the answers and failures, the answers
    read with the chosen node and pod labels (`seen`), and what it takes from the facts kept."""

    q: Queries
    asked: dict[str, str]
    results: dict[str, Result]
    failures: dict[str, str]
    seen: dict[str, Result] = field(init=False)
    kept: dict[str, Result] = field(default_factory=dict)
    """The facts' answers the sample is built on beside this refresh's."""
    age: float = 0.0
    """Seconds since the facts were read."""
    quiet: str | None = None
    """Why an engine's KV usage and requests running were not read, where the refresh read them by exception
    (`Queries.over`: `engines` holds those at or over the fraction); None: every engine's were read."""

    def __post_init__(self) -> None:
        self.seen = project(self.results, self.q.labels)

    def by_exception(self) -> None:
        """The engines over the fraction as the refresh's `engines` (its failure as that of `engines`)."""
        over, failed = self.results.pop("engines_over", None), self.failures.pop("engines_over", None)
        if over is not None and self.q.over is not None:
            self.results["engines"], self.quiet = over, quiet_why(self.q.over)
        elif failed is not None:
            self.failures["engines"] = failed
        self.seen = project(self.results, self.q.labels)

    def every_engine(self) -> dict[str, str]:
        """What to ask beside the pools read again, where the refresh read the gauges by exception: every
        engine's, so a pool that came or changed comes with its engine's gauges, as with the slow facts; and
        how many engines of each model send them."""
        if self.quiet is None:
            return {}
        return {"engines": TABLE["engines"].promql(self.q), **_model_counts(self.q)}

    def read_with(self, more: dict[str, Result]) -> None:
        """The refresh's engines with what `more` read of them: every engine's gauges, or the requests running
        of those over the fraction. Where every engine's read failed, the refresh's reading by exception stands
        (it is whole, of this moment): not a failure of the engines beside the engines it read."""
        if "engines" in more or (self.quiet is not None and "engines" in self.failures and "pools" in self.failures):
            # every engine's read; or its read and the pools' failed, and the pools alone name the quiet engines:
            # a refresh whose engines are unknown, as a full read's whose two queries failed
            if "engines" not in more:
                self.results.pop("engines", None)
            self.quiet = None
            self.results.pop("engine_running", None)  # every engine's gauges hold these
            self.failures.pop("engine_running", None)
            return
        if self.quiet is not None:
            self.failures.pop("engines", None)
        if "engine_running" in more:
            running = self.results.pop("engine_running")
            self.results["engines"] = Result([*self.results["engines"].series, *running.series])

    async def more(
        self, client: PrometheusClient, promql: dict[str, str], at: float, *, part: bool = False
    ) -> dict[str, Result]:
        """`promql` asked too: its answers join the round's (returned); `part`: as `ask`'s (each failure said,
        none raised)."""
        more, failed = await ask(client, promql, at, part=part)
        failures = {name: why for name, why in self.failures.items() if name not in more}  # answered now
        self.results, self.failures = {**self.results, **more}, {**failures, **failed}
        self.seen = project(self.results, self.q.labels)
        return more


class FleetReader:
    """Reads the fleet at each refresh; keeps the slow facts between refreshes. With `queries.look` None it
    makes the full read (every GPU one by one) each time. `rules`: the judge's, handed in by the caller.
    `first_look` (the fleet screen's): the overview's first read returns a first look, without the costly slow
    facts (`FleetSample.reading` says which), and the next read reads those at the first look's moment."""

    def __init__(
        self, queries: Queries, rules: ReadRules, facts_every_s: float = FACTS_EVERY_S, *, first_look: bool = False
    ) -> None:
        self.queries, self.read_rules, self.facts_every_s = queries, rules, facts_every_s
        self.looked: tuple[FirstRead, float] | None = None
        """A first look's read and moment, while its rest is still to read (`first_look`)."""
        self.first_look = first_look
        self.facts: Facts | None = None
        roomy()  # a reader lives across refreshes: each keeps its sample's 10^5 objects until the next
        self.rules: bool | None = None
        """Whether the server has the recording rules' series (None: not asked yet)."""
        self.held: tuple[float, float] | None = None
        """When the server's hold-back was measured, and its seconds (held_back.py)."""
        self.keyed: tuple[Result, list[Key], frozenset[Key] | None] | None = None
        """The gauges' answer last keyed, with `engine_key` of each of its series (asked twice a refresh) and the
        engines they name (None: not asked yet)."""
        self.reported: tuple[Result | None, Result | None, dict[str, float | None] | None] | None = None
        """The reporting nodes of the last refresh, with the answers they were read from."""
        self.nodes = NodesKept()
        """The nodes as the last refresh made them, and of what: kept where made of the same."""
        self.recorded = KeptRecorded()
        """The refresh's recorded figures, kept until the rules are evaluated again."""
        self.labels = LabelMemo()
        """Each query's label sets as its last read made them (label_memo.py)."""
        self.poolless: tuple[frozenset[Key], EngineFacts, frozenset[Key]] | None = None
        """The engines the facts' counters counted that no pool of theirs names, with what it was made of."""

    def _keys(self, results: dict[str, Result]) -> list[Key]:
        """`engine_key` of each series of the gauges' answer (`engines`), in order: the very list the last
        answer's were where its series carry the same labels (the label memo hands the same dicts then, so they
        compare by identity: 2 ms, not 25 ms of keying at 20,000 series), and fleet_engines then keeps where each
        engine's gauges are."""
        answer = results.get("engines", NO_ANSWER)
        if self.keyed is None or self.keyed[0] is not answer:
            last = self.keyed
            if last is None or not _same_labels(last[0].series, answer.series):
                last = (answer, [engine_key(s.labels) for s in answer.series], None)
            self.keyed = (answer, last[1], last[2])
        return self.keyed[1]

    def _reporting(self, seen: dict[str, Result]) -> dict[str, float | None] | None:
        """`_reporting` of the answers, the last refresh's where they are the same objects."""
        parts = (seen.get("node_memory"), seen.get("nodes_age"))
        if self.reported is None or parts[0] is not self.reported[0] or parts[1] is not self.reported[1]:
            self.reported = (*parts, _reporting(seen))
        return self.reported[2]

    def _named(self, results: dict[str, Result]) -> frozenset[Key]:
        """The engines the refresh's gauges (`engines`) name (made once for the keys `_keys` hands)."""
        keys = self._keys(results)
        assert self.keyed is not None  # set by _keys
        answer, _, named = self.keyed
        if named is None:
            named = frozenset(keys)
            self.keyed = (answer, keys, named)
        return named

    def _counted(self, r: _Round, facts: Facts) -> frozenset[Key]:
        """The engines the counters read now are of (`Facts.counted`): those the refresh's gauges name; where it
        read them by exception (only the engines over the fraction), those counted before too, so an engine
        that crosses the fraction later is not one that came."""
        named = self._named(r.results)
        return named if r.quiet is None else facts.counted | named

    async def read(self, client: PrometheusClient, at: float) -> FleetSample:
        """One sample at `at`, with how far behind `at` the server answers (measured with the slow facts, and at
        each read while it answers behind): its queries all asked at the one moment it answers as of
        (held_back.py). Raises PrometheusError when no query could be read."""
        due = self.held is None or not self.held[0] <= at < self.held[0] + self.facts_every_s
        found = Moment(at, None)
        self.labels.turn()
        client.remember(self.labels)
        # no collection during the read: its answers die with it, so collecting meanwhile only walked them
        # (gc_pause.py)
        with paused_gc():
            if self.looked is not None:  # the rest of a first look: its moment, so the whole picture is one
                found, due = Moment(self.looked[1], None), False
            elif due or (self.held is not None and self.held[1]):
                found = await moment(client, at)
            sample = await self._read(client, found.asked)
        if due or found.held_s is not None:
            self.held = (at if due or self.held is None else self.held[0], self._held_s(found))
        if self.held is None or not self.held[1]:
            return sample
        return sample.model_copy(update={"held_back_s": self.held[1]})

    def _held_s(self, found: Moment) -> float:
        """The hold-back `found` measured; where the probe had no answer, the one measured before (0: none): a
        failed probe is not a server that stopped holding back, and the next read probes again while it is over
        0, so its queries are asked at one moment."""
        if found.held_s is not None:
            return found.held_s
        return 0.0 if self.held is None else self.held[1]

    async def _read(self, client: PrometheusClient, at: float) -> FleetSample:
        look = self.queries.look
        if look is None:
            return await read_full(client, self.queries, at, self.read_rules.stale)
        facts = self.facts
        due = facts is None or not facts.at <= at < facts.at + self.facts_every_s
        narrowed = _jobs(None if facts is None else facts.results.get("pool_jobs"))  # the jobs targets down is asked in
        if self.looked is not None:
            r = await self._rest(client)
        elif facts is None and self.rules is None:
            r = await self._first(client, at, look)
            if self.looked is not None:
                return self._glance(client.connection.url, r, at)
        else:
            r = await self._refresh(client, at, due, look, narrowed)
        await self._keep_facts(client, r, at, due)
        await self._again(client, r, at, look)
        await self._down_again(client, r, narrowed, at)
        sample, looker = self._build(client.connection.url, r, at, look)
        if not looker.needs:
            return sample.model_copy(update={"gpus": _with_listed([], sample.gpus)})
        return await self._detail(client, r, sample, looker, at)

    async def _first(self, client: PrometheusClient, at: float, look: float) -> _Round:
        """The first read: each query as soon as what it needs is known (first_read.py); a first look's all
        but the rest (LATER's, and which nodes the rules record), kept for the next read."""
        asked, bounds = (*FAST, *FACTS), partial(low_bounds, look=look)
        if self.first_look:
            results, failures, self.rules, read = await first_look(client, self.queries, at, asked, bounds)
            self.looked = (read, at)
        else:
            results, failures, self.rules = await first_answers(client, self.queries, at, asked, bounds)
        q = replace(self.queries, rules=self.rules)
        return _Round(q, _promql(q, asked), results, failures)

    async def _rest(self, client: PrometheusClient) -> _Round:
        """A first look's rest, read at its moment: the round of the whole first read."""
        assert self.looked is not None
        (read, _), self.looked = self.looked, None
        results, failures, self.rules = await read.rest(client, tuple(LATER))
        q = replace(self.queries, rules=self.rules)
        return _Round(q, _promql(q, (*FAST, *FACTS)), results, failures)

    def _glance(self, url: str, r: _Round, at: float) -> FleetSample:
        """A first look: the sample of the answers read so far, with what is still being read (LATER's words);
        no GPU read one by one (which nodes need it is told with the join)."""
        sample = build(url, at, r.results, r.failures, r.q.matchers, r.q.labels, stale=self.read_rules.stale)
        reading = list(dict.fromkeys(LATER.values()))
        return sample.model_copy(update={"node_figures_from": _figures_from(r.q), "reading": reading})

    async def _refresh(self, client: PrometheusClient, at: float, due: bool, look: float, jobs: list[str]) -> _Round:
        """A later refresh: its queries, the facts when due, else the pools or whether they changed; targets down
        in `jobs` (those the facts' pools name; none: an hour back)."""
        q = replace(self.queries, rules=bool(self.rules))
        promql = self._asked(q, at, due, look, jobs)
        results, failures = await self._answers(client, q, promql, at)
        r = _Round(q, promql, results, failures)
        if "engines_over" in promql:
            r.by_exception()
        facts = self.facts
        if facts is not None and "pools" not in promql and "engine_counters" in promql:
            self.facts = facts = _counters_again(facts, r.results, r.failures, self._counted(r, facts))
        if facts is not None and "pools" not in promql and "model_counts" in r.results:  # kept with the pools'
            counts = r.results["model_counts"]
            self.facts = _made_kept(facts, replace(facts, results={**facts.results, "model_counts": counts}))
        return r

    async def _answers(
        self, client: PrometheusClient, q: Queries, promql: dict[str, str], at: float
    ) -> tuple[dict[str, Result], dict[str, str]]:
        """`promql` asked at `at`; with the rules, their figures kept until the rules are evaluated again."""
        import asyncio

        recorded = {n: p for n, p in promql.items() if n in KEPT} if q.rules else {}
        if not recorded:
            return await ask_with_exporters(client, q, promql, at)
        others = {n: p for n, p in promql.items() if n not in recorded}
        # both run to their end before either's failure is raised: no request is left in flight
        asked, kept = await asyncio.gather(
            ask_with_exporters(client, q, others, at),
            self.recorded.read(client, q, recorded, at),
            return_exceptions=True,
        )
        if isinstance(kept, BaseException):
            raise kept
        if isinstance(asked, PrometheusError) and kept[0]:  # the figures answered: the others fail alone, as in ask
            asked = ({}, dict.fromkeys(others, str(asked)))
        if isinstance(asked, BaseException):
            raise asked
        return {**kept[0], **asked[0]}, {**kept[1], **asked[1]}

    def _asked(self, q: Queries, at: float, due: bool, look: float, jobs: list[str]) -> dict[str, str]:
        """What a later refresh asks at `at`, targets down in `jobs`."""
        facts = self.facts
        promql = _promql(q, FAST)
        if facts is not None and (bounds := low_bounds(facts.results["card_totals"], look)):
            promql["node_low"] = TABLE["node_low"].promql(q, bounds)
        if jobs:
            promql["targets_down"] = TABLE["targets_down"].promql(q, jobs)
        if due or facts is None:
            return promql | _promql(q, FACTS) | _model_counts(q)
        if at < facts.pools_at:
            return promql | _promql(q, POOLS) | _model_counts(q)  # kept ones newer than `at`: see pools_changed
        promql["pools_changed"] = TABLE["pools_changed"].promql(q, at - facts.pools_at)
        if facts.engines.zeros.pending:  # a rate the full read may have now: the counters alone again
            promql["engine_counters"] = TABLE["engine_counters"].promql(q)
        if q.over is not None:  # between the pools' reads, the fleet screen's engines by exception
            del promql["engines"]
            promql["engines_over"] = TABLE["engines_over"].promql(q, q.over)
            promql["model_gauges"] = TABLE["model_gauges"].promql(q)
            if "model_counts" not in facts.results:  # the first refresh by exception, or its last read failed
                promql |= _model_counts(q)
        return promql

    async def _keep_facts(self, client: PrometheusClient, r: _Round, at: float, due: bool) -> None:
        """The slow facts kept where read now: when due, or again now as the reporting nodes changed."""
        facts = self.facts
        reporting = self._reporting(r.seen)
        if not due and (facts is None or reporting is None or not _changed(facts.reporting, reporting)):
            return
        if not due:  # the nodes changed since the facts were read: read them again now
            r.read_with(await r.more(client, _promql(r.q, FACTS) | r.every_engine(), at))
        if all(name in r.results for name in FACTS):
            slow = {n: r.results[n] for n in (*FACTS, "model_counts") if n in r.results}
            facts = Facts(at, slow, reporting or {}, Slow.of(slow, r.q.labels), at, self._named(r.results))
            self.facts, self.rules = facts, facts.rules

    async def _again(self, client: PrometheusClient, r: _Round, at: float, look: float) -> None:
        """What the refresh's answers say to ask now (`_more`); the facts kept with what it read."""
        again = self._more(r, look)
        if not again:
            return
        more = await r.more(client, again, at)
        r.read_with(more)
        facts = self.facts
        if facts is not None and "pools" in more:
            read = {name: more[name] for name in (*POOLS, "model_counts") if name in more}
            # a count of the engines that failed is not the last pools' count: asked again at the next refresh
            kept = {n: a for n, a in facts.results.items() if not (n == "model_counts" and n in r.failures)}
            self.facts = replace(facts, results={**kept, **read}, pools_at=at, counted=self._counted(r, facts))
        elif facts is not None and "engine_counters" in again:
            self.facts = _counters_again(facts, r.results, r.failures, self._counted(r, facts))

    async def _down_again(self, client: PrometheusClient, r: _Round, asked: list[str], at: float) -> None:
        """Targets down asked again where the pools read in this refresh (with the slow facts, or again as they
        changed) name a job the refresh's query left out (`asked`: the jobs it was narrowed to): an engine that
        came in a new job and went down is down now, not a refresh later."""
        jobs = _jobs(self.facts.results.get("pool_jobs") if self.facts is not None else None)
        if asked and "targets_down" in r.asked and set(jobs) - set(asked):
            await r.more(client, {"targets_down": TABLE["targets_down"].promql(r.q, jobs)}, at, part=True)

    def _more(self, r: _Round, look: float) -> dict[str, str]:
        """The count of GPUs under the fraction once the cards' totals are known; the pools where one changed
        (or the change is unknown); the counters of an engine that came that no pool names."""
        facts, again = self.facts, {}
        unasked = "node_low" not in r.results and "node_low" not in r.failures
        if facts is not None and unasked and (bounds := low_bounds(facts.results["card_totals"], look)):
            again["node_low"] = TABLE["node_low"].promql(r.q, bounds)
        changed = r.results.get("pools_changed")
        if "pools_changed" in r.asked and "pools" not in r.results and (changed is None or changed.series):
            again |= _promql(r.q, POOLS) | r.every_engine()
        elif facts is not None and "engine_counters" not in r.asked and self._named(r.results) - facts.counted:
            again["engine_counters"] = TABLE["engine_counters"].promql(r.q)
        if r.quiet is not None and facts is not None and "engines" not in again and self._unlisted(r, facts):
            again["engines"] = TABLE["engines"].promql(r.q)
        over = r.results.get("engines")
        # asked beside every engine's gauges too (read with the pools): where that read fails, the refresh's
        # reading by exception stands, and needs these
        if r.quiet is not None and r.q.over is not None and over and over.series:
            again["engine_running"] = TABLE["engine_running"].promql(r.q, r.q.over)
        return again

    def _unlisted(self, r: _Round, facts: Facts) -> bool:
        """Whether a refresh by exception leaves out an engine the counters counted that no pool names: the
        engines it reads nothing of are found by their pools, so one with none is found only where its KV usage
        is over the fraction or a request of it waits (it would be gone from the screen, not from `fleet check`)."""
        memo = self.poolless
        if memo is None or memo[0] is not facts.counted or memo[1] is not facts.engines:  # 3 ms at 10^4 engines
            memo = self.poolless = (facts.counted, facts.engines, facts.counted - facts.engines.pools.keys())
        poolless = memo[2]
        if not poolless:
            return False
        waiting = r.results.get("waiting", NO_ANSWER).series
        return bool(poolless - self._named(r.results) - {engine_key(s.labels) for s in waiting})

    def _build(self, url: str, r: _Round, at: float, look: float) -> tuple[FleetSample, NodeLook]:
        """The refresh's sample, on the facts kept, and the judge's look at its nodes (`needs`: the nodes whose
        GPUs are read one by one, label -> names)."""
        facts = self.facts
        if "pools" in r.results:  # read in this refresh: whatever the change query could not say, read now
            r.failures.pop("pools_changed", None)
        r.kept, r.age = _kept(facts, r.results, r.failures), 0.0 if facts is None else at - facts.at
        totals = {} if facts is None else facts.totals
        looker = self.read_rules.looks(r.seen, totals, () if facts is None else facts.identities, look)
        sample = build(
            url,
            at,
            {**r.kept, **r.results},
            r.failures,
            r.q.matchers,
            r.q.labels,
            join_age_s=r.age,
            slow=_kept_slow(facts, r.results, at),
            known=_kept_engines(facts, r.results, r.failures),
            looks=looker,
            engine_keys=self._keys(r.results) if "engines" in r.results else None,
            stale=self.read_rules.stale,
            kept=self.nodes,
            quiet=r.quiet,
        )
        return sample.model_copy(update={"node_figures_from": _figures_from(r.q)}), looker

    async def _detail(
        self,
        client: PrometheusClient,
        r: _Round,
        sample: FleetSample,
        looker: NodeLook,
        at: float,
    ) -> FleetSample:
        """The sample with the GPUs of the nodes the look needs read one by one, those it keeps (`looker.kept`)."""
        detail = {"gpu_memory": TABLE["gpu_detail"].promql(r.q, looker.needs)}
        more, failed = await ask(client, detail, at, part=True)  # failed: the sample says so, the refresh goes on
        if failed:
            answers = {**r.kept, **r.results}
            failures = {**r.failures, **failed}
            again = build(
                client.connection.url,
                at,
                answers,
                failures,
                r.q.matchers,
                r.q.labels,
                join_age_s=r.age,
                stale=self.read_rules.stale,
                quiet=r.quiet,
            )
            return again.model_copy(update={"nodes": sample.nodes, "node_figures_from": sample.node_figures_from})
        facts = self.facts
        identities = facts.identities if facts is not None else identities_of(r.seen.get("gpu_pods", NO_ANSWER).series)
        memory = project(more, r.q.labels).get("gpu_memory", NO_ANSWER).series
        gpus = looker.kept(gpus_of(memory, identities), sample, identities)
        return sample.model_copy(update={"gpus": _with_listed(gpus, sample.gpus)})


def _made_kept(before: Facts, after: Facts, engines: EngineFacts | None = None) -> Facts:
    """`after`, facts with an answer beside `before`'s that changes neither the cards' totals nor the pools, with
    what was made of those (functools.cached_property's, where made): the engines' facts `engines` where given
    (the counters read again), else `before`'s, so their 10^4 records made once per pools read stay (1 s)."""
    if "totals" in before.__dict__:
        after.__dict__["totals"] = before.totals
    if engines is not None or "engines" in before.__dict__:
        after.__dict__["engines"] = engines if engines is not None else before.engines
    return after


def _model_counts(q: Queries) -> dict[str, str]:
    """How many engines of each model send the gauges read per model, where the refreshes read by exception:
    asked with the pools, and kept with them."""
    return {} if q.over is None else {"model_counts": TABLE["model_counts"].promql(q)}


def _figures_from(q: Queries) -> NodeFigures:
    """Where a read with these settings took the per-node figures from."""
    return "recording rules" if q.rules else "raw series"


def _promql(q: Queries, asked: tuple[str, ...]) -> dict[str, str]:
    """Each query's PromQL with these settings, by name."""
    return {name: TABLE[name].promql(q) for name in asked}


def _jobs(answer: Result | None) -> list[str]:
    """The jobs a `pool_jobs` answer names (none where it was not read)."""
    return [] if answer is None else sorted({job for s in answer.series if (job := s.labels.get("job"))})


def _kept(facts: Facts | None, results: dict[str, Result], failures: dict[str, str]) -> dict[str, Result]:
    """The facts' answers this refresh did not read, but for the pools' read again that failed (the engines'
    fields then say why, never the old answer)."""
    if facts is None:
        return {}
    return {n: a for n, a in facts.results.items() if n not in results and not (n in POOLS and n in failures)}


def _counters_again(facts: Facts, results: dict[str, Result], failures: dict[str, str], named: frozenset[Key]) -> Facts:
    """The facts with the engine counters read again alone (some engine's preemption rate was pending, or an
    engine came that no pool names); where that read failed, the ones kept, which still say which engines read
    as zero (the answers and failures lose it either way: the sample is built on the facts'); `named`: the
    engines the gauges name now."""
    failures.pop("engine_counters", None)
    counters = results.pop("engine_counters", None)
    if counters is None:
        return facts
    again = replace(facts, results={**facts.results, "engine_counters": counters}, counted=named)
    # the engines' records kept where their facts read the same
    made = facts.engines.with_counters(counters.series) if "engines" in facts.__dict__ else None
    return _made_kept(facts, again, made)


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


def _same_labels(then: list[Series], now: list[Series]) -> bool:
    """Whether each series carries the labels of the one at its place before (the lists compared in C)."""
    return len(then) == len(now) and [s.labels for s in then] == [s.labels for s in now]


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
    if then is now:
        return False
    if then.keys() != now.keys():
        return True
    for node, total in now.items():
        before = then[node]
        if (before is None) != (total is None) or (
            before is not None and total is not None and abs(total - before) > GPU_CHANGE_MIB
        ):
            return True
    return False
