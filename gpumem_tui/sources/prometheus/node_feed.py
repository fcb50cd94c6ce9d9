"""One node's series read from Prometheus (the node-narrowed queries of node_queries.py, joined by the fleet's
own `fleet.build`), and the feed that gives the single-node screen that node's `Sample` (node_sample.py):
reference/fleet.md section 0's PrometheusNodeFeed. The simulated fleet of `fleet --demo` feeds the same
`NodeFeed` from its in-process answers (demo/fleet_answers.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from gpumem_tui.models import Sample
from gpumem_tui.sources.feed import Feed, Past
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, PrometheusError, Result
from gpumem_tui.sources.prometheus.held_back import moment
from gpumem_tui.sources.prometheus.labels import AUTO, LabelChoice
from gpumem_tui.sources.prometheus.node_history import SPAN_S, NodeHistoryReader
from gpumem_tui.sources.prometheus.node_queries import NodeQueries
from gpumem_tui.sources.prometheus.node_sample import (
    NodeNotFound,
    NodeRead,
    node_read,
    node_sample,
    second_answers,
    second_round,
)
from gpumem_tui.sources.prometheus.read_rules import Stale


async def read_node(client: PrometheusClient, queries: NodeQueries, at: float, stale: Stale) -> NodeRead:
    """The node's series at `at`: its GPUs, pods and age first, then the engines of those pods (and of its
    host), each asked at the one moment the server answers as of (held_back.py); `stale`: the judge's rule.
    Raises PrometheusError when no query could be read."""
    found = await moment(client, at)
    at = found.asked
    results, failures, errors = await _ask(client, queries.first_round(), at)
    more, failed, _ = await _ask(client, second_round(queries, results), at)
    more, names = second_answers(more, queries.node)
    if names:
        queries = replace(queries, exporter_names=names)
        again, failed_again, _ = await _ask(client, queries.exported(), at)
        more, failed = more | again, failed | failed_again
    results |= more
    failures |= failed
    if not results:
        raise errors[0]  # as the server failed: down, auth or timeout
    read = node_read(client.connection.url, at, results, failures, queries, stale)
    if not found.held_s:
        return read
    return replace(read, fleet=read.fleet.model_copy(update={"held_back_s": found.held_s}))


async def _ask(
    client: PrometheusClient, queries: dict[str, str], at: float
) -> tuple[dict[str, Result], dict[str, str], list[PrometheusError]]:
    """Every query at once: (the answers, the failures in words, the errors) by query name."""
    answers = await asyncio.gather(*(client.query(q, at) for q in queries.values()), return_exceptions=True)
    results: dict[str, Result] = {}
    failures: dict[str, str] = {}
    errors: list[PrometheusError] = []
    for name, answer in zip(queries, answers, strict=True):
        if isinstance(answer, Result):
            results[name] = answer
        elif isinstance(answer, PrometheusError):
            failures[name] = str(answer)
            errors.append(answer)
        elif isinstance(answer, BaseException):
            raise answer
    return results, failures, errors


NodeReader = Callable[[], Awaitable[NodeRead]]


class NodeFeed(Feed):
    """One node's samples from a reader of its series: a Prometheus (`prometheus_node_feed`), or the
    simulated fleet's answers (demo/fleet_answers.py)."""

    def __init__(self, read: NodeReader, node: str, label: str, at: float | None = None, history: Past | None = None):
        """`at`: the fixed moment every read is evaluated at (`--at`, a demo's moment); None: now. `history`:
        the node's history for forensics (range queries over --history); None: the minutes kept only."""
        self.read, self.node, self.name, self.live, self.at = read, node, label, True, at
        self.history = history
        self.last: NodeRead | None = None
        """The read behind the latest sample: the fleet's records of the node, for what only they say."""

    def now(self) -> float | None:
        return self.at

    def past(self) -> Past | None:
        return self.history

    def stopper(self) -> str:
        return (
            "a node read from Prometheus: gpumem-tui reads its series and has no hand on its processes. "
            "Stop it on the node itself (gpumem-tui there, or kill PID)."
        )

    def ends_first_read(self, error: Exception) -> bool:
        """No series names the node, or the server cannot be read: nothing will come (it used to be read before
        the screen opened, which then never drew nor took `q` while a slow server answered)."""
        return isinstance(error, NodeNotFound | PrometheusError)

    async def sample(self) -> Sample:
        read = await self.read()
        sample = node_sample(read, self.node)
        self.last = read
        return sample


def prometheus_node_feed(
    connection: Connection,
    node: str,
    matchers: str = "",
    at: float | None = None,
    timeout_s: float = 10.0,
    history_s: float = SPAN_S,
    labels: LabelChoice = AUTO,
    *,
    stale: Stale,
) -> NodeFeed:
    """The node's series in the Prometheus at `connection`, evaluated now on each read (or always at `at`);
    forensics (`f`) walks its `history_s` before then, read with range queries. `labels`: the fleet's
    --node-label and --pod-label, so the node is the one the fleet names; `stale`: the judge's rule."""
    queries = NodeQueries(node, matchers, labels)
    history = NodeHistoryReader(connection, node, matchers, at, history_s, timeout_s, labels, stale=stale)

    async def read() -> NodeRead:
        async with PrometheusClient(connection, query_timeout_s=timeout_s) as client:
            return await read_node(client, queries, time.time() if at is None else at, stale)

    return NodeFeed(read, node, f"prometheus {connection.url} node {node}", at, history)
