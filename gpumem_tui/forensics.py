"""OOM forensics on a recording: each GPU's memory over time with markers (a process started or exited, a
finding first raised), and "who grew": each process's growth over the minutes before the first critical
finding."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from gpumem_tui.autoplan import EnginePlan, engine_plans
from gpumem_tui.catalog import Catalog
from gpumem_tui.diagnose import diagnose
from gpumem_tui.findings import Finding, Thresholds
from gpumem_tui.findings.situation import free_bytes
from gpumem_tui.history import History
from gpumem_tui.models import Sample
from gpumem_tui.overlays import ManualPlan

MAX_POINTS = 600


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Marker(_Frozen):
    """Something that happened at `offset_s` seconds into the recording."""

    offset_s: float
    kind: Literal["process_started", "process_exited", "finding"]
    gpu_index: int | None = None
    pid: int | None = None
    name: str | None = None
    bytes: int | None = None
    """A process's last reading before it exited, or its first after it started."""
    code: str | None = None
    severity: str | None = None
    text: str


class GpuTimeline(_Frozen):
    gpu_index: int
    total_bytes: int | None
    points: list[tuple[float, int]]
    """(offset_s, used bytes); at most MAX_POINTS, each the peak of its stretch so no spike is lost."""


class Growth(_Frozen):
    gpu_index: int
    pid: int
    name: str | None
    start_bytes: int
    """Its memory at the start of the window (0 when it started later; its first reading when it was there
    when the recording began)."""
    end_bytes: int
    """Its memory at the first critical finding (its last reading, when it exited before)."""
    growth_bytes: int


class Forensics(_Frozen):
    start_timestamp: float
    end_offset_s: float
    first_critical_offset_s: float | None
    first_critical: Finding | None
    window_s: float
    timelines: list[GpuTimeline]
    markers: list[Marker]
    who_grew: list[Growth]
    """Largest growth first; empty when nothing critical was ever found."""


class Investigation:
    """Walks a recording sample by sample; `plans` and `findings` are those of the latest sample."""

    def __init__(self, catalog: Catalog, manual: ManualPlan | None, thresholds: Thresholds):
        self.catalog, self.manual, self.thresholds = catalog, manual, thresholds
        self.history = History()
        self.start: float | None = None
        self.points: dict[int, list[tuple[float, int]]] = {}
        self.totals: dict[int, int | None] = {}
        self.memory: dict[tuple[int, int], list[tuple[float, int]]] = {}
        self.names: dict[tuple[int, int], str | None] = {}
        self.markers: list[Marker] = []
        self.open_findings: set[tuple] = set()
        self.first_critical: tuple[float, Finding] | None = None
        self.previous: Sample | None = None
        self.offset = 0.0
        self.plans: list[EnginePlan] = []
        self.findings: list[Finding] = []

    def past(self, sample: Sample, until_s: float | None) -> bool:
        """Whether the sample lies beyond `until_s` seconds into the recording."""
        return until_s is not None and self.start is not None and sample.timestamp - self.start > until_s

    def add(self, sample: Sample) -> None:
        self.start = sample.timestamp if self.start is None else self.start
        self.offset = sample.timestamp - self.start
        self.history.add(sample)
        for gpu in sample.gpus:
            self.totals[gpu.index] = gpu.memory_total_bytes or self.totals.get(gpu.index)
            if gpu.memory_used_bytes is not None:
                self.points.setdefault(gpu.index, []).append((self.offset, gpu.memory_used_bytes))
        self._processes(sample)
        self.plans = engine_plans(sample, self.catalog, self.manual)
        self.findings = diagnose(self.plans, sample, self.history, self.thresholds)
        self._mark_findings(self.findings)
        self.previous = sample

    def _processes(self, sample: Sample) -> None:
        now = {(p.gpu_index, p.pid): p for p in sample.processes}
        before = {(p.gpu_index, p.pid): p for p in self.previous.processes} if self.previous else {}
        for key, process in now.items():
            self.names[key] = process.name or self.names.get(key)
            if process.gpu_memory_bytes is not None:
                self.memory.setdefault(key, []).append((self.offset, process.gpu_memory_bytes))
            if self.previous is not None and key not in before:
                self._marker("process_started", key, process.gpu_memory_bytes, "started")
        for key, process in before.items():
            if key not in now:
                self._marker("process_exited", key, process.gpu_memory_bytes, self._exit_words(key[0]))

    def _exit_words(self, gpu_index: int) -> str:
        """'exited', and 'likely out of memory' when its card was nearly full just before."""
        gpu = next((g for g in self.previous.gpus if g.index == gpu_index), None) if self.previous else None
        free = free_bytes(gpu) if gpu else None
        if gpu and gpu.lost:
            return "exited (its GPU was lost)"
        if (
            free is not None
            and gpu.memory_total_bytes
            and free < self.thresholds.headroom_critical_fraction * (gpu.memory_total_bytes)
        ):
            return f"exited with {free / 2**30:,.2f} GiB free on GPU {gpu_index} just before: likely out of memory"
        return "exited"

    def _marker(self, kind: str, key: tuple[int, int], held: int | None, words: str) -> None:
        gpu_index, pid = key
        name = self.names.get(key)
        self.markers.append(
            Marker(
                offset_s=self.offset,
                kind=kind,
                gpu_index=gpu_index,
                pid=pid,
                name=name,
                bytes=held,
                text=f"{name or 'pid ' + str(pid)} (pid {pid}) {words}",
            )
        )

    def _mark_findings(self, findings: list[Finding]) -> None:
        keys = set()
        for finding in findings:
            key = (*finding.key, finding.severity)  # a finding that turns critical is marked again
            keys.add(key)
            if finding.severity == "critical" and self.first_critical is None:
                self.first_critical = (self.offset, finding)
            if key not in self.open_findings and finding.severity != "info":
                self.markers.append(
                    Marker(
                        offset_s=self.offset,
                        kind="finding",
                        gpu_index=finding.gpu_index,
                        pid=finding.pid,
                        code=finding.code,
                        severity=finding.severity,
                        text=finding.title,
                    )
                )
        self.open_findings = keys


def investigate(
    samples: Iterable[Sample],
    catalog: Catalog,
    manual: ManualPlan | None = None,
    thresholds: Thresholds | None = None,
    until_s: float | None = None,
) -> Forensics | None:
    """Walk a recording (up to `until_s` seconds into it); None when it holds no samples."""
    walk = Investigation(catalog, manual, thresholds or Thresholds())
    for sample in samples:
        if walk.past(sample, until_s):
            break
        walk.add(sample)
    return None if walk.start is None else result(walk)


def result(walk: Investigation) -> Forensics:
    critical_at, critical = walk.first_critical or (None, None)
    timelines = [
        GpuTimeline(gpu_index=i, total_bytes=walk.totals.get(i), points=_thin(points))
        for i, points in sorted(walk.points.items())
    ]
    return Forensics(
        start_timestamp=walk.start,
        end_offset_s=walk.offset,
        first_critical_offset_s=critical_at,
        first_critical=critical,
        window_s=walk.thresholds.forensics_window_s,
        timelines=timelines,
        markers=walk.markers,
        who_grew=[] if critical_at is None else who_grew(walk, critical_at),
    )


def who_grew(walk: Investigation, at: float) -> list[Growth]:
    """Each process's growth from `window_s` before `at` to `at`, largest first (shrinking ones left out)."""
    since = at - walk.thresholds.forensics_window_s
    out = []
    for (gpu_index, pid), readings in walk.memory.items():
        inside = [(t, b) for t, b in readings if t <= at]
        if not inside or inside[-1][0] < since:
            continue
        before = [b for t, b in inside if t <= since]
        # Present from the recording's first sample: what it held before is unknown, so count from there.
        start = before[-1] if before else inside[0][1] if inside[0][0] == 0 else 0
        end = inside[-1][1]
        if end > start:
            out.append(
                Growth(
                    gpu_index=gpu_index,
                    pid=pid,
                    name=walk.names.get((gpu_index, pid)),
                    start_bytes=start,
                    end_bytes=end,
                    growth_bytes=end - start,
                )
            )
    return sorted(out, key=lambda g: -g.growth_bytes)


def _thin(points: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """At most MAX_POINTS: each stretch keeps its highest reading (an OOM is a peak)."""
    if len(points) <= MAX_POINTS:
        return points
    stride = -(-len(points) // MAX_POINTS)
    return [max(points[i : i + stride], key=lambda p: p[1]) for i in range(0, len(points), stride)]
