"""The overview's first read (the fleet screen's first frame, a `fleet check`): every query goes out as soon
as what it needs is known, never a round behind another.

Most of the first read's queries do not depend on whether the server has the series of `gpumem-tui fleet
rules`: they go out at once. The per-node figures (RULED) do. Beside the others, the server's label API
lists which of the rules' names it holds (an index lookup: no sample is read). Where it does not list them
all, the raw figures go out at once and `rules_present` is not asked: its answer is the names listed. Where
it lists them all, the recorded figures go out with `rules_named` (which of them have series now), and which
reporting nodes they do not record is told from answers the read asks anyway: the nodes that report
(`nodes_age`) without a recorded GPU count (`rules_present`'s own check selects every GPU's series: it is
asked only where one of those failed). The raw figures go out only if the rules do not cover the fleet.
Where the label API fails (a proxy that passes only the query API, a server that does not answer), the raw
figures go out, with `rules_present` beside them: the refreshes after read the rules where it finds them.
The count of GPUs under the fraction (`node_low`) goes out as soon as the cards' totals answer, in the same
form as they.

The answers are those of one refresh that reads the slow facts: the same names, each a result or a failure."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

from gpumem_tui.sources.prometheus import gpumem_export
from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError, Result, Series
from gpumem_tui.sources.prometheus.queries import NODE_LABELS, RECORDED, Queries, literal_regex

RULED = ("card_totals", "node_memory", "node_reserved", "node_gpus", "node_least_free")
"""The queries read from the rules' series where the server has them (`node_low` too, made with card_totals'
answer); card_totals first, as the count waits for it."""
LOOKBACK_S = 300.0
"""Prometheus's default lookback: an instant query sees a series with a sample this long before."""
Bounds = Callable[[Result], dict[str, float]]
"""The cards' totals answer -> card model -> the free MiB under which a GPU is counted (reader.py)."""
Answers = dict[str, Result | PrometheusError]
NAMED = "rules_named"
REPORTING = "nodes_age"
"""The nodes that report: with the recorded GPU counts, which of them the rules do not record."""


def covers(result: Result) -> bool:
    """Whether a `rules_present` answer holds every `gpumem:*` series the reader uses, with figures recorded
    for every node that reports."""
    if any(s.labels.get("unrecorded") and s.value > 0 for s in result.series):
        return False
    return {s.labels.get("recorded") for s in result.series} >= set(RECORDED)


async def first_answers(
    client: PrometheusClient, queries: Queries, at: float, names: tuple[str, ...], bounds: Bounds
) -> tuple[dict[str, Result], dict[str, str], bool]:
    """The answers to `names` (those of RULED among them in the form the server allows), `node_low` where the
    totals give bounds, and the exporter's: (results, failures in one line each, whether the figures are the
    rules'). Raises the first PrometheusError when no query could be read."""
    answers: Answers = {}
    listing: list[Result] = []
    """`rules_present`'s answer where it is not asked as one query (kept apart: no query made it whole)."""
    answered = {name: asyncio.Event() for name in names}

    async def one(name: str, promql: str) -> None:
        try:
            answers[name] = await client.query(promql, at)
        except PrometheusError as exc:
            answers[name] = exc
        finally:
            if name in answered:
                answered[name].set()

    async def exporters() -> None:
        answers.update(await gpumem_export.read(client, queries, at))

    async def figures(rules: bool) -> None:
        q = replace(queries, rules=rules)

        async def totals_then_count() -> None:
            await one("card_totals", q.card_totals)
            totals = answers["card_totals"]
            if isinstance(totals, Result) and (found := bounds(totals)):
                await one("node_low", q.node_low(found))

        await asyncio.gather(totals_then_count(), *(one(n, getattr(q, n)) for n in RULED[1:]))

    async def checked() -> bool:
        """With the recorded figures: whether the rules cover every node that reports."""
        if REPORTING not in answered:
            await asyncio.gather(one("rules_present", queries.rules_present), figures(True))
            return _covers(answers["rules_present"])
        # which nodes they record, from answers the read asks anyway (the server's own check selects every GPU's)
        await asyncio.gather(one(NAMED, queries.rules_named), figures(True), answered[REPORTING].wait())
        presence = _presence(answers.pop(NAMED), answers[REPORTING], answers["node_gpus"], at)
        if presence is None:  # one of them failed: the server's own check
            await one("rules_present", queries.rules_present)
            return _covers(answers["rules_present"])
        listing.append(presence)
        return covers(presence)

    async def ruled() -> bool:
        listed = await _listed(client, queries, at)
        if listed is None:  # the label API failed: the raw figures now, and beside them whether the rules are
            # there, for the refreshes after this one (asked first, a server that never answers took a round more)
            await asyncio.gather(one("rules_present", queries.rules_present), figures(False))
            return False
        if not listed >= set(RECORDED):
            listing.append(Result([Series({"recorded": name}, 1.0, at) for name in sorted(listed)]))
            await figures(False)
            return False
        if await checked():
            return True
        for name in (*RULED, "node_low"):  # a node reports that the rules do not record: the raw figures
            answers.pop(name, None)
        await figures(False)
        return False

    others = [n for n in names if n not in RULED and n != "rules_present"]
    # the label API first: the figures it decides are the costliest queries, and the client opens 8 connections
    rules, *_ = await asyncio.gather(ruled(), *(one(n, getattr(queries, n)) for n in others), exporters())
    results = {name: a for name, a in answers.items() if isinstance(a, Result)}
    failures = {name: str(a) for name, a in answers.items() if isinstance(a, PrometheusError)}
    if not results and failures:
        raise next(a for a in answers.values() if isinstance(a, PrometheusError))
    if listing:
        results["rules_present"] = listing[0]
    return results, failures, bool(rules)


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
