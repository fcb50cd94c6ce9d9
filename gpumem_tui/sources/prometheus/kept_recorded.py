"""The per-node figures a refresh reads from the recording rules' series, kept until the rules are evaluated
again: they change only then (every 30 s as `fleet rules` writes them), and the fleet screen reads every 15 s,
so a refresh in between asks one small query (`rules_evaluated`) instead of 50,000 series at 10,000 nodes.

An answer is kept with its PromQL and the evaluation it was read after; it is used again only while both are the
same. Read just after a newer evaluation landed it is read again at the next refresh, never held too long: the
next one sees the evaluation move. docs/design/queries.md says why the group's last rule tells it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from operator import is_, itemgetter

from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError, Result
from gpumem_tui.sources.prometheus.fleet import ask
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.query_table import TABLE, names

KEPT = names(lambda q: q.recorded and q.overview in ("refresh", "asked"))
"""The recorded queries a refresh asks (not the slow facts', which are kept with the facts)."""


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
        evaluated = await _evaluated(client, queries, at)
        same = evaluated is not None and evaluated == self.evaluated
        kept = {n: answer for n, (p, answer) in self.answers.items() if same and promql.get(n) == p}
        asked = {n: p for n, p in promql.items() if n not in kept}
        results, failures = await ask(client, asked, at, part=True) if asked else ({}, {})
        then = {n: answer for n, (p, answer) in self.answers.items() if promql.get(n) == p}
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
