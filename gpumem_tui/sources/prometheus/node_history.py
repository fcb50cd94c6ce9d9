"""One node's history in Prometheus, read with range queries, as the samples forensics walks (a recording's
interface). Each step is built into the node's Sample by the instant read's own code, so a moment read either
way is one Sample; a gap or a NaN is said in the warnings, never read as zero. docs/design/fleet.md says how."""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from gpumem_tui.models import Sample
from gpumem_tui.sources.prometheus.client import (
    Connection,
    PrometheusClient,
    PrometheusError,
    RangeResult,
    Result,
    Series,
    sorted_answers,
)
from gpumem_tui.sources.prometheus.held_back import moment
from gpumem_tui.sources.prometheus.history import span_words, step_for
from gpumem_tui.sources.prometheus.labels import AUTO, LabelChoice
from gpumem_tui.sources.prometheus.node_queries import EXPORTER_ONLY, NodeQueries
from gpumem_tui.sources.prometheus.node_sample import (
    NodeNotFound,
    dcgm_names,
    node_read,
    node_sample,
    second_answers,
    second_round,
)
from gpumem_tui.sources.prometheus.read_rules import Stale

SPAN_S = 3600.0
"""How far back a node's forensics looks unless --history says: the fleet screen's history line's span."""
NO_ZEROS = "no points there, not zeros"
NO_GROWTH = (
    "Prometheus gives no pids: who grew before a finding is unknown (`gpumem-tui export` on the node publishes "
    "its processes)"
)


@dataclass
class NodeHistory:
    """The node's samples over `start`..`end`, each cut out of the range answers at its step (`moments`)."""

    node: str
    start: float
    end: float
    step_s: float
    samples: list[Sample] = field(default_factory=list)
    moments: list[float] = field(default_factory=list)
    """The step each sample was cut out at (its own timestamp is the node's newest sample then)."""
    warnings: list[str] = field(default_factory=list)
    reporter: str = "dcgm-exporter"
    """What reports the node's samples, as a gap names it: dcgm-exporter, or the node's own gpumem-tui export
    where no dcgm-exporter series names it."""

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples)


async def read_node_history(
    client: PrometheusClient, queries: NodeQueries, end: float, span_s: float, stale: Stale
) -> NodeHistory:
    """The node's series over the `span_s` before `end` (both in whole seconds, so the steps are the server's
    own timestamps); `stale`: the judge's rule. Raises PrometheusError when the GPUs' memory could not be read."""
    step = step_for(span_s)
    end = math.floor(end)
    start = end - math.ceil(span_s)
    first, failures, errors = await _ask(client, queries.first_round(), start, end, step)
    if "gpu_memory" in errors:
        raise errors["gpu_memory"]  # as the server failed: down, auth, timeout, or too many samples
    more, failed, _ = await _ask(client, second_round(queries, first), start, end, step)
    reporter = "dcgm-exporter" if dcgm_names(first) else _exporter_or_either(more)
    more, names = second_answers(more, queries.node)
    if names:
        queries = replace(queries, exporter_names=names)
        again, failed_again, _ = await _ask(client, queries.exported(), start, end, step)
        more, failed = more | again, failed | failed_again
    results = first | more
    return node_history(client.connection.url, queries, start, end, step, results, failures | failed, stale, reporter)


def _exporter_or_either(more: dict[str, RangeResult]) -> str:
    """Who reports a node no dcgm-exporter series names: its gpumem-tui export where some of its series answered."""
    answered = any(more[name].series for name in EXPORTER_ONLY if name in more)
    return "gpumem-tui export" if answered else "dcgm-exporter or gpumem-tui export"


async def _ask(
    client: PrometheusClient, queries: dict[str, str], start: float, end: float, step: float
) -> tuple[dict[str, RangeResult], dict[str, str], dict[str, PrometheusError]]:
    """Every query at once over the span: (the answers, the failures in words, the errors) by query name."""
    answers = await asyncio.gather(
        *(client.query_range(q, start, end, step) for q in queries.values()), return_exceptions=True
    )
    results, failures = sorted_answers(queries, answers, RangeResult)
    return results, failures, {n: a for n, a in zip(queries, answers, strict=True) if isinstance(a, PrometheusError)}


def node_history(
    source: str,
    queries: NodeQueries,
    start: float,
    end: float,
    step: float,
    results: dict[str, RangeResult],
    failures: dict[str, str],
    stale: Stale,
    reporter: str = "dcgm-exporter",
) -> NodeHistory:
    """The NodeHistory of range answers (pure: canned answers in, samples out); `reporter`: what reports the
    node's samples (NodeHistory.reporter)."""
    node = queries.node
    history = NodeHistory(node, start, end, step, reporter=reporter)
    points = {name: [(s.labels, dict(s.points)) for s in r.series] for name, r in results.items()}
    for i in range(int(round((end - start) / step)) + 1):
        at = start + i * step
        answers = {
            name: Result(
                [Series(labels, value, at) for labels, found in series if (value := found.get(at)) is not None],
                results[name].warnings,
            )
            for name, series in points.items()
        }
        read = node_read(source, at, answers, failures, queries, stale)
        try:
            sample = node_sample(read, node)
        except NodeNotFound:
            continue  # no series of the node within the hour: a gap, said below
        if not any(n.data_age_s is not None for n in read.fleet.nodes):
            continue  # none within Prometheus's 5 min lookback either
        if history.samples and sample.timestamp == history.samples[-1].timestamp:
            continue  # the same sample again: the step is finer than the scrape
        history.samples.append(sample)
        history.moments.append(at)
    history.warnings = [
        *(
            f"node {node}: {name} unknown over the span, because the range query failed: {why}"
            for name, why in failures.items()
        ),
        *sorted({f"the server said: {w}" for r in results.values() for w in r.warnings}),
        *_gaps(history),
        *_unknown_memory(history),
        *([] if results.get("gpu_processes", RangeResult()).series else [f"node {node}: {NO_GROWTH}"]),
    ]
    return history


def _gaps(history: NodeHistory) -> list[str]:
    """Each stretch with no new sample of the node for over twice its usual interval (the median between its
    samples), the span's ends included."""
    stamps = [s.timestamp for s in history.samples]
    if not stamps:
        return [
            f"node {history.node}: no {history.reporter} sample from {_when(history.start, history.end)}: {NO_ZEROS}"
        ]
    spacings = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    usual = statistics.median(spacings) if spacings else history.step_s
    said = []
    for a, b in zip([history.start, *stamps], [*stamps, history.end], strict=True):
        if b - a > 2 * usual:
            said.append(  # the usual spacing at the step's grain: the node may report more often than that
                f"node {history.node}: no new {history.reporter} sample from {_when(a, b)} ({b - a:,.0f} s, where the "
                f"read found a new one every {usual:,.0f} s): {NO_ZEROS}"
            )
    return said


def _unknown_memory(history: NodeHistory) -> list[str]:
    """Each GPU whose memory used was unknown in some samples (NaN, or no FB_USED series); MIG cards aside:
    their memory is their instances'."""
    unknown: dict[int, int] = {}
    for sample in history.samples:
        for gpu in sample.gpus:
            if gpu.memory_used_bytes is None and not gpu.mig_enabled:
                unknown[gpu.index] = unknown.get(gpu.index, 0) + 1
    count = len(history.samples)
    return [
        f"node {history.node}: GPU {index} memory used unknown in {n} of {count} samples (a NaN reading, or no "
        f"series): {NO_ZEROS}"
        for index, n in sorted(unknown.items())
    ]


def _when(a: float, b: float) -> str:
    """`2026-01-01 00:00:30 to 00:02:00 UTC` (UTC; the second date only when it differs)."""
    first, second = time.gmtime(a), time.gmtime(b)
    later = "%H:%M:%S" if first[:3] == second[:3] else "%Y-%m-%d %H:%M:%S"
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', first)} to {time.strftime(later, second)} UTC"


@dataclass(frozen=True)
class NodeHistoryReader:
    """A node's history in a Prometheus, for the node's screen (`f`) and `check -v`: the feed's `past`."""

    connection: Connection
    node: str
    matchers: str = ""
    at: float | None = None
    """The end of the span (--at); None: now, when read."""
    span_s: float = SPAN_S
    timeout_s: float = 10.0
    labels: LabelChoice = AUTO
    """The fleet's --node-label and --pod-label."""
    stale: Stale = field(kw_only=True)
    """The judge's rule of when a node's data is stale."""

    @property
    def what(self) -> str:
        return history_words(self.node, self.connection.url, self.at, self.span_s)

    def read(self) -> NodeHistory:
        """The range read, on an event loop of its own (the forensics screen reads it in a thread)."""

        async def read() -> NodeHistory:
            async with PrometheusClient(self.connection, query_timeout_s=self.timeout_s) as client:
                # now: as of the moment the server answers (held_back.py), whose last points it has whole
                end = (await moment(client, time.time())).asked if self.at is None else self.at
                queries = NodeQueries(self.node, self.matchers, self.labels)
                return await read_node_history(client, queries, end, self.span_s, self.stale)

        return asyncio.run(read())


def history_words(node: str, url: str, at: float | None, span_s: float) -> str:
    """`node N from Prometheus URL, the last 1 h (step 30 s)`; with --at, `the 1 h before <UTC time>`."""
    span = span_words(span_s)
    when = (
        f"the last {span}"
        if at is None
        else f"the {span} before {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(at))}"
    )
    return f"node {node} from Prometheus {url}, {when} (step {span_words(step_for(span_s))})"
