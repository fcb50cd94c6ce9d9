"""The overview's first read (the fleet screen's first frame, a `fleet check`): every query goes out as soon
as what it needs is known, never a round behind another. The per-node figures that the recording rules of
`gpumem-tui fleet rules` may hold (the table's `recorded` queries) wait for the server's label API to say
whether it has them; every other query goes out at once. How the rules' coverage is told without a costly
query: docs/design/queries.md. The answers are those of one refresh that reads the slow facts; a first look's
leave out LATER's, which the reader asks next at the same moment."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gpumem_tui.sources.prometheus import gpumem_export
from gpumem_tui.sources.prometheus.answer_forms import LOOKBACK_S
from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError, Result, Series
from gpumem_tui.sources.prometheus.queries import NODE_LABELS, RECORDED, Queries, literal_regex
from gpumem_tui.sources.prometheus.query_table import TABLE, names

TOTALS, LOW = "card_totals", "node_low"
"""The cards' totals, and the count of GPUs under the fraction made with their answer (as soon as it comes)."""
REPORTING = "nodes_age"
"""The nodes that report: with the recorded GPU counts, which of them the rules do not record (so the first
read asks it of the raw series, at once)."""
RECORDED_AGES = "nodes_age recorded"
"""The nodes' ages from the rules' series, asked with the recorded figures: where the rules cover every node,
the sample's ages, as a refresh reads them."""
RULED = names(lambda q: q.recorded and q.name not in (LOW, REPORTING))
"""The queries of the first read that wait to be read from the rules' series where the server has them."""
Bounds = Callable[[Result], dict[str, float]]
"""The cards' totals answer -> card model -> the free MiB under which a GPU is counted (reader.py)."""
Answers = dict[str, Result | PrometheusError]
LATER = {
    "gpu_pods": "which pods hold which GPUs",
    "nodes_seen": "which nodes reported in the hour",
    "exporters_seen": "which nodes reported in the hour",
    **dict.fromkeys(
        names(lambda q: q.overview not in ("asked", "over") and (q.source == "engine" or q.name == "targets_down")),
        "the engines",
    ),
}
"""What a first look (the fleet screen's first frame, reader.py) leaves to the read after it, with what each
tells in words: the costliest slow facts at 10,000 nodes (the join: 80,000 series, half the bytes and the client's
CPU; the hour's: the server's costliest queries), and the engines', which are not the whole picture's before the
join (a node's own exporter's engine is matched to a scraped one by its node). docs/design/queries.md."""
NAMED, PRESENT = "rules_named", "rules_present"


def covers(result: Result) -> bool:
    """Whether a `rules_present` answer holds every `gpumem:*` series the reader uses, with figures recorded
    for every node that reports."""
    if any(s.labels.get("unrecorded") and s.value > 0 for s in result.series):
        return False
    return {s.labels.get("recorded") for s in result.series} >= set(RECORDED)


async def first_answers(
    client: PrometheusClient, queries: Queries, at: float, asked: tuple[str, ...], bounds: Bounds
) -> tuple[dict[str, Result], dict[str, str], bool]:
    """The answers to `asked` (those of RULED among them in the form the server allows), `node_low` where the
    totals give bounds, and the exporter's: (results, failures in one line each, whether the figures are the
    rules'). Raises the first PrometheusError when no query could be read."""
    read = FirstRead(client, queries, at, bounds, {name: asyncio.Event() for name in asked})
    return await read.read(asked)


async def first_look(
    client: PrometheusClient, queries: Queries, at: float, asked: tuple[str, ...], bounds: Bounds
) -> tuple[dict[str, Result], dict[str, str], bool, FirstRead]:
    """As `first_answers`, but for LATER's, and with the rules' figures taken where the label API lists all their
    names, which nodes they record checked with the rest: (results, failures, whether the figures are the rules'
    so far, the read, whose `rest` reads the rest at the same moment)."""
    now = tuple(n for n in asked if n not in LATER and n != REPORTING)  # the raw ages: with the raw figures only
    read = FirstRead(client, queries, at, bounds, {name: asyncio.Event() for name in now}, look=True)
    return (*await read.read(now), read)


@dataclass
class FirstRead:
    """The first read's queries and answers as they come; a first look's (`look`) is kept for its `rest`."""

    client: PrometheusClient
    queries: Queries
    at: float
    bounds: Bounds
    answered: dict[str, asyncio.Event]
    """An event per query asked at once, set when it answers."""
    look: bool = False
    """A first look: the rules' coverage is checked with the rest (`rest`), and the raw ages are asked with the
    raw figures only."""
    answers: Answers = field(default_factory=dict)
    listing: list[Result] = field(default_factory=list)
    """`rules_present`'s answer where it is not asked as one query (kept apart: no query made it whole)."""
    left: str | None = None
    """What a first look left to its rest: `cover` (the rules were taken on their names), `present` (the label
    API failed: the server's own check)."""

    async def read(self, asked: tuple[str, ...]) -> tuple[dict[str, Result], dict[str, str], bool]:
        others = [n for n in asked if n not in RULED and n != PRESENT]
        # the label API first: the figures it decides are the costliest queries, and the client opens 8 connections
        rules, *_ = await asyncio.gather(
            self.ruled(), *(self.one(n, TABLE[n].promql(self.queries)) for n in others), self.exporters()
        )
        return (*self.collected(), bool(rules))

    async def rest(
        self, client: PrometheusClient, later: tuple[str, ...]
    ) -> tuple[dict[str, Result], dict[str, str], bool]:
        """A first look's rest, at its moment (with `client`): `later`'s answers and the check of the rules it
        left; the answers are then `first_answers`'."""
        self.client = client
        self.answered = {}  # the first read's events are its event loop's, which may be gone: the rest waits on none

        async def ruled() -> bool:
            if self.left == "cover":
                return await self.cover()
            if self.left == "present":
                await self.one(PRESENT, TABLE[PRESENT].promql(self.queries))
            return False

        rules, *_ = await asyncio.gather(ruled(), *(self.one(n, TABLE[n].promql(self.queries)) for n in later))
        return (*self.collected(), bool(rules))

    def collected(self) -> tuple[dict[str, Result], dict[str, str]]:
        answers = self.answers
        results = {name: a for name, a in answers.items() if isinstance(a, Result)}
        failures = {name: str(a) for name, a in answers.items() if isinstance(a, PrometheusError)}
        if not results and failures:
            raise next(a for a in answers.values() if isinstance(a, PrometheusError))
        if self.listing:
            results[PRESENT] = self.listing[0]
        return results, failures

    async def one(self, name: str, promql: str) -> None:
        try:
            self.answers[name] = await self.client.query(promql, self.at)
        except PrometheusError as exc:
            self.answers[name] = exc
        finally:
            if name in self.answered:
                self.answered[name].set()

    async def exporters(self) -> None:
        self.answers.update(await gpumem_export.read(self.client, self.queries, self.at))

    async def figures(self, rules: bool) -> None:
        """The per-node figures, from the rules' series or the raw ones; the count as soon as the totals come
        (the rules' count, made against each GPU's own total, at once). A first look's raw figures come with the
        raw ages."""
        q = replace(self.queries, rules=rules)

        async def totals_then_count() -> None:
            await self.one(TOTALS, TABLE[TOTALS].promql(q))
            totals = self.answers[TOTALS]
            if not rules and isinstance(totals, Result) and (found := self.bounds(totals)):
                await self.one(LOW, TABLE[LOW].promql(q, found))

        others = [self.one(n, TABLE[n].promql(q)) for n in RULED if n != TOTALS]
        if rules:
            others += [self.one(LOW, TABLE[LOW].promql(q, {})), self.one(RECORDED_AGES, TABLE[REPORTING].promql(q))]
        elif self.look and REPORTING not in self.answers:
            others.append(self.one(REPORTING, TABLE[REPORTING].promql(q)))
        await asyncio.gather(totals_then_count(), *others)

    async def present(self) -> bool:
        """The server's own check of the rules (`rules_present`) beside the recorded figures."""
        await self.one(PRESENT, TABLE[PRESENT].promql(self.queries))
        return _covers(self.answers[PRESENT])

    async def checked(self) -> bool:
        """With the recorded figures: whether the rules cover every node that reports."""
        if REPORTING not in self.answered:
            await asyncio.gather(self.one(PRESENT, TABLE[PRESENT].promql(self.queries)), self.figures(True))
            return _covers(self.answers[PRESENT])
        # which nodes they record, from answers the read asks anyway (the server's own check selects every GPU's)
        await asyncio.gather(
            self.one(NAMED, TABLE[NAMED].promql(self.queries)), self.figures(True), self.answered[REPORTING].wait()
        )
        return await self.covered()

    async def covered(self) -> bool:
        """Whether the rules record every node that reports, from `rules_named` and the raw ages asked (the
        server's own check where one of them failed)."""
        presence = _presence(self.answers.pop(NAMED), self.answers[REPORTING], self.answers["node_gpus"], self.at)
        if presence is None:  # one of them failed: the server's own check
            return await self.present()
        self.listing.append(presence)
        return covers(presence)

    async def cover(self) -> bool:
        """A first look's rules, taken on their names: whether they record every node that reports, told as
        `checked` tells it, now; where not, the raw figures in place of theirs."""
        self.answers[RECORDED_AGES] = self.answers.pop(REPORTING)
        await asyncio.gather(
            self.one(NAMED, TABLE[NAMED].promql(self.queries)),
            self.one(REPORTING, TABLE[REPORTING].promql(self.queries)),
        )
        return await self.settled(await self.covered())

    async def settled(self, recorded: bool) -> bool:
        """The rules' figures kept where they record every node, with their ages (where read) as the sample's;
        else the raw figures read in their place."""
        ages = self.answers.pop(RECORDED_AGES, None)
        if recorded:
            if isinstance(ages, Result):
                self.answers[REPORTING] = ages
            return True
        for name in (*RULED, LOW):  # a node reports that the rules do not record: the raw figures
            self.answers.pop(name, None)
        await self.figures(False)
        return False

    async def ruled(self) -> bool:
        """The per-node figures in the form the server allows: whether they are the rules'."""
        listed = await _listed(self.client, self.queries, self.at)
        if listed is None:  # the label API failed: the raw figures now, and beside them whether the rules are
            # there, for the refreshes after this one (asked first, a server that never answers took a round more)
            if self.look:
                self.left = "present"  # a first look's rest asks it
                await self.figures(False)
            else:
                await asyncio.gather(self.one(PRESENT, TABLE[PRESENT].promql(self.queries)), self.figures(False))
            return False
        if not listed >= set(RECORDED):
            self.listing.append(Result([Series({"recorded": name}, 1.0, self.at) for name in sorted(listed)]))
            await self.figures(False)
            return False
        if self.look:  # a first look takes the rules on their names: which nodes they record is told with the rest
            self.left = "cover"
            await self.figures(True)
            self.answers[REPORTING] = self.answers.pop(RECORDED_AGES)
            return True
        return await self.settled(await self.checked())


def _covers(answer: Result | PrometheusError) -> bool:
    return isinstance(answer, Result) and covers(answer)


def _presence(
    named: Result | PrometheusError, reporting: Result | PrometheusError, counted: Result | PrometheusError, at: float
) -> Result | None:
    """`rules_present`'s answer made of its first half (`rules_named`), the nodes that report (`nodes_age`: one
    series per node, as `count by` the node's labels of FB_USED) and the recorded GPU counts: the nodes that
    report without a recorded count, matched on the node's labels as its `unless on (...)` matches them.
    None where one of them failed."""
    if not isinstance(named, Result) or not isinstance(reporting, Result) or not isinstance(counted, Result):
        return None

    def node(s: Series) -> tuple[str, ...]:
        return tuple(s.labels.get(label, "") for label in NODE_LABELS)

    unrecorded = len({node(s) for s in reporting.series} - {node(s) for s in counted.series})
    more = [Series({"unrecorded": "nodes"}, float(unrecorded), at)] if unrecorded else []
    return Result([*named.series, *more], named.warnings)


async def _listed(client: PrometheusClient, queries: Queries, at: float) -> set[str] | None:
    """The rules' names the server holds series of within the lookback before `at` (None: its label API
    failed)."""
    pattern = "|".join(literal_regex(name) for name in RECORDED)
    selector = queries.names(pattern)
    try:
        return set(await client.label_values("__name__", selector, at - LOOKBACK_S, at))
    except PrometheusError:
        return None
