"""The per-node figures a refresh reads from the recording rules' series, kept until the rules are evaluated
again: they change only then (every 30 s), and the fleet screen reads every 15 s, so a refresh in between asks
one small query (`rules_evaluated`), not 50,000 series at 10,000 nodes. Read just after a newer evaluation
landed, an answer is read again at the next refresh, never held longer.

After an evaluation, where the rules record which nodes' figures moved since the one kept (NODE_CHANGED), only
those nodes' figures are read, by name, in the kept answers' place; else they are read whole. Why each check:
docs/design/queries.md."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from operator import is_, itemgetter

from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError, Result, Series
from gpumem_tui.sources.prometheus.fleet import ask
from gpumem_tui.sources.prometheus.queries import NODE_LABELS, Queries, as_matcher, literal_regex
from gpumem_tui.sources.prometheus.query_table import TABLE, names
from gpumem_tui.sources.prometheus.rules import selector_labels

KEPT = names(lambda q: q.recorded and q.overview in ("refresh", "asked"))
"""The recorded queries a refresh asks (not the slow facts', which are kept with the facts)."""
WATCHED: dict[str, tuple[object, ...]] = {"node_memory": (), "node_least_free": (), "node_low": ({},)}
"""The refresh's figures whose recorded series the rules' change record watches (queries.WATCHED_SERIES): query name ->
the arguments of its recorded form."""
NARROW_AT_MOST = 1000
"""More nodes moved than this: the figures are read whole (a long list of names costs the server more to match
than the answer saves)."""
SAME_MOMENT_S = 5e-4
"""Two evaluations' moments as the server writes them (milliseconds) are this close or the same."""


@dataclass
class KeptRecorded:
    """The recorded answers of the last refresh, and the rules' evaluation they were read after (None: unknown,
    nothing is kept)."""

    evaluated: float | None = None
    answers: dict[str, tuple[str, Result]] = field(default_factory=dict)
    """name -> (its PromQL, its answer)."""

    async def read(
        self, client: PrometheusClient, queries: Queries, promql: dict[str, str], at: float
    ) -> tuple[dict[str, Result], dict[str, str]]:
        """The answers to `promql` (KEPT queries), those kept where the rules were not evaluated since and the
        PromQL is the same, the rest asked now: (answers, failures in one line each)."""
        import asyncio

        then = {n: answer for n, (p, answer) in self.answers.items() if promql.get(n) == p}
        watching = self.evaluated is not None and any(not then[n].warnings for n in WATCHED if n in then)
        evaluated, changes = await asyncio.gather(
            _evaluated(client, queries, at), _changes(client, queries, at) if watching else _nothing()
        )
        same = evaluated is not None and evaluated == self.evaluated
        kept = dict(then) if same else {}
        keys = tuple(dict.fromkeys((*selector_labels(queries.matchers), *NODE_LABELS)))
        moved = None if same or evaluated is None else _moved(changes, self.evaluated, evaluated, keys)
        if moved is not None and 4 * len(moved.nodes) > len(then.get("node_memory", Result()).series):
            moved = None  # half the nodes or more (used and free a node): their names cost more than a whole read
        watched = [n for n in WATCHED if n in then and not then[n].warnings] if moved is not None else []
        if moved is not None and not moved.nodes:  # none moved: the kept answers are the answers
            kept |= {n: then[n] for n in watched}
        narrowed = {n: _narrowed(queries, n, WATCHED[n], moved) for n in watched if moved and moved.nodes}
        asked = {n: p for n, p in promql.items() if n not in kept and n not in narrowed}
        results, failures = await ask(client, {**asked, **narrowed}, at, part=True) if asked or narrowed else ({}, {})
        if moved is not None:
            results |= {n: _patched(then[n], results[n], moved) for n in narrowed.keys() & results.keys()}
        read = {**kept, **{n: _as_then(answer, then.get(n)) for n, answer in results.items()}}
        self.evaluated = evaluated
        self.answers = {} if evaluated is None else {n: (promql[n], answer) for n, answer in read.items()}
        return read, failures


def _as_then(now: Result, then: Result | None) -> Result:
    """`then` where `now` reads the same (each series the same labels and value; the same warnings): the nodes
    made of it are kept whole (node_part.py), as a GPU's memory mostly stays between two evaluations. The label
    memo gives most series the very labels of the last read, so few are compared by value; a zero is compared
    with its sign too (an age of -0.0 is written so). The series' times are the query's, which no figure reads."""
    if then is None or len(now.series) != len(then.series) or now.warnings != then.warnings:
        return now
    labels, values = itemgetter(0), itemgetter(1)
    read, were = list(map(values, now.series)), list(map(values, then.series))
    if read != were or (
        0.0 in read  # most answers hold no zero: their signs are not walked value by value
        and any(v == 0 and math.copysign(1, v) != math.copysign(1, w) for v, w in zip(read, were, strict=True))
    ):
        return now
    was = list(map(labels, then.series))
    kept = map(is_, map(labels, now.series), was)
    alike = all(now.series[i].labels == was[i] for i, same in enumerate(kept) if not same)
    return then if alike else now


async def _evaluated(client: PrometheusClient, queries: Queries, at: float) -> float | None:
    """When the rules were last evaluated, as of `at` (None: not told: no such series, or the query failed)."""
    try:
        answer = await client.query(TABLE["rules_evaluated"].promql(queries), at)
    except PrometheusError:
        return None
    return answer.series[0].value if len(answer.series) == 1 else None


async def _nothing() -> None:
    return None


async def _changes(client: PrometheusClient, queries: Queries, at: float) -> Result | None:
    """The rules' change record as of `at` (None: the query failed)."""
    try:
        return await client.query(TABLE["node_changes"].promql(queries), at)
    except PrometheusError:
        return None


@dataclass(frozen=True)
class Moved:
    """The nodes whose watched figures moved, each as the values of its `keys` labels (the selector's, the node's)."""

    nodes: set[tuple[str, ...]]
    keys: tuple[str, ...]


def _moved(changes: Result | None, since: float | None, at: float, keys: tuple[str, ...]) -> Moved | None:
    """The nodes whose watched figures moved between the evaluations at `since` and `at`; None where the record
    does not compare those two (no record, an evaluation between them, one of an older evaluation) or too many
    moved to name."""
    if changes is None or since is None:
        return None
    marks: dict[str, list[float]] = {"since": [], "at": []}
    moved = set()
    for s in changes.series:
        mark = s.labels.get("changes")
        if mark in marks:
            marks[mark].append(s.value)
        elif abs(s.value - at) <= SAME_MOMENT_S:  # else an older evaluation's, not ended by a staleness marker
            moved.add(tuple(s.labels.get(k, "") for k in keys))
    told = all(marks.values()) and all(
        abs(value - moment) <= SAME_MOMENT_S for mark, moment in (("since", since), ("at", at)) for value in marks[mark]
    )
    return Moved(moved, keys) if told and len(moved) <= NARROW_AT_MOST else None


def _narrowed(queries: Queries, name: str, args: tuple[object, ...], moved: Moved) -> str:
    """`name`'s recorded query for the nodes that moved only: each by the first label that names it (one query
    per such label, joined with `or`)."""
    by_label: dict[str, set[str]] = defaultdict(set)
    for node in moved.nodes:
        labels = dict(zip(moved.keys, node, strict=True))
        label = next((n for n in NODE_LABELS if labels.get(n)), "instance")
        by_label[label].add(labels.get(label, ""))
    parts = []
    for label, values in sorted(by_label.items()):
        found = as_matcher((label, "=~", "|".join(literal_regex(v) for v in sorted(values))))
        mine = replace(queries, matchers=", ".join(m for m in (queries.matchers, found) if m))
        parts.append(TABLE[name].promql(mine, *args))
    return " or ".join(f"({p})" for p in parts)


def _patched(then: Result, now: Result, moved: Moved) -> Result:
    """The kept answer with the series of the nodes that moved those of `now`, in their place (a node that went
    has none; one that came is last): where they read as the kept ones, `_as_then` keeps the kept answer."""
    keys, nodes = moved.keys, moved.nodes
    # a series none of whose labels' values is a moved node's is not one of them (a node named by no label: each)
    named = {value for node in nodes for value in node if value} if all(map(any, nodes)) else None
    fresh: dict[tuple[str, ...], list[Series]] = defaultdict(list)
    for s in now.series:
        if (key := tuple(s.labels.get(k, "") for k in keys)) in nodes:
            fresh[key].append(s)
    series = []
    for s in then.series:
        if (named is not None and named.isdisjoint(s.labels.values())) or (
            key := tuple(s.labels.get(k, "") for k in keys)
        ) not in nodes:
            series.append(s)
        else:
            series += fresh.pop(key, [])  # at its first series' place; its others are gone with the pop
    return Result(series + [s for came in fresh.values() for s in came], now.warnings)
