"""Sampling and judging on the refresh interval, never on a scrape: an `Evaluator` takes one sample of its
feed, judges it with an `Investigation` as the app's refresh worker does (plans and findings), and replaces
`latest` with the whole result. A scrape reads `latest`, so N scrapes never take N samples."""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.findings import Finding
from gpumem_tui.diagnosis.findings.node import refresh_failed
from gpumem_tui.diagnosis.forensics import Investigation, memory_window_s
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.export.workloads import Workloads, kept
from gpumem_tui.models import Sample

if TYPE_CHECKING:  # the simulated fleet writes an Evaluation with no feed and no event loop
    import asyncio

    from gpumem_tui.sources.feed import Feed


@dataclass(frozen=True)
class Evaluation:
    """One refresh: the sample judged, its plans and findings, and the counts a scrape reports about the
    exporter itself. Replaced whole, never changed, so a scrape in another thread reads one refresh."""

    sample: Sample | None = None
    """None before the first refresh and after one that failed: then no series of the node is published."""
    plans: list[EnginePlan] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    samples: int = 0
    """Samples taken from the feed since the exporter started."""
    failures: int = 0
    """Refreshes that failed (the feed or the judge raised)."""
    finished_at: float | None = None
    """Wall-clock seconds since the epoch when the refresh ended."""
    duration_s: float | None = None
    """How long the refresh took: sampling and judging."""
    hostname: str | None = None
    """The node's name from the last sample that arrived (a failed refresh keeps it)."""
    workloads: Workloads = field(default_factory=dict)
    """Each finding's routing labels (workloads.kept): chosen once, kept while the finding stays raised."""


ErrorHandler = Callable[[str, BaseException], None]
"""Told of each failed refresh: where it failed (`sample` or `judge`) and the exception."""


class Evaluator:
    """Samples its feed and judges each sample, keeping the last `memory_window_s` of history as the app does."""

    def __init__(self, feed: Feed, judge: Judge, on_error: ErrorHandler | None = None):
        self.feed, self.on_error = feed, on_error
        self.investigation = Investigation(
            judge.catalog, judge.plan, judge.thresholds, memory_window_s(judge.thresholds)
        )
        self.latest = Evaluation()

    async def catch_up(self, samples: AsyncIterable[Sample]) -> None:
        """Judge samples that come before the first refresh, publishing none: the walk `check` makes to --at."""
        import asyncio

        async for sample in samples:
            await asyncio.to_thread(self.investigation.add, sample)

    async def evaluate(self) -> Evaluation:
        """One refresh. A feed or a judge that raises makes a failed refresh: no series of the node, the
        `refresh_failed` finding, and the next refresh tries again."""
        import asyncio

        started, before = time.perf_counter(), self.latest
        where = "sample"
        try:
            sample = await self.feed.sample()
            where = "judge"
            plans, findings = await asyncio.to_thread(self._judge, sample)
        except Exception as exc:  # noqa: BLE001 - a failed refresh degrades the series, never the exporter
            if self.on_error is not None:
                self.on_error(where, exc)
            taken = before.samples + (where == "judge")
            evaluation = Evaluation(
                findings=[refresh_failed(f"{type(exc).__name__}: {exc}")],
                samples=taken,
                failures=before.failures + 1,
                finished_at=time.time(),
                duration_s=time.perf_counter() - started,
                hostname=before.hostname,
            )
        else:
            evaluation = Evaluation(
                sample=sample,
                plans=plans,
                findings=findings,
                samples=before.samples + 1,
                failures=before.failures,
                finished_at=time.time(),
                duration_s=time.perf_counter() - started,
                hostname=sample.hostname,
                workloads=kept(sample, plans, findings, before.workloads),
            )
        self.latest = evaluation
        return evaluation

    def _judge(self, sample: Sample) -> tuple[list[EnginePlan], list[Finding]]:
        self.investigation.add(sample)
        return list(self.investigation.plans), list(self.investigation.findings)

    async def run(self, interval_s: float, stop: asyncio.Event) -> None:
        """A refresh every `interval_s` seconds (from the start of one to the next; never two at once)
        until `stop` is set."""
        import asyncio

        while not stop.is_set():
            started = time.monotonic()
            await self.evaluate()
            left = interval_s - (time.monotonic() - started)
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, left))
            except TimeoutError:
                continue
