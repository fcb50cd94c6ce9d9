"""OOM forensics over a sequence of samples, a recording or the app's last minutes alike: each GPU's memory
over time with markers (a process started or exited, a finding first raised), who grew before the first
critical finding, and, when an engine's processes disappear, the finding that explains its exit."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Literal, NamedTuple

from gpumem_tui.catalog import Catalog
from gpumem_tui.diagnosis.autoplan import EnginePlan, engine_plans, measured_facts
from gpumem_tui.diagnosis.diagnose import findings_of
from gpumem_tui.diagnosis.findings import SEVERITY_ORDER, Finding, FindingCode, Severity, Thresholds
from gpumem_tui.diagnosis.findings.exit import Exited, Stopped, engine_exited, engine_stopped
from gpumem_tui.diagnosis.findings.situation import Situation, free_bytes
from gpumem_tui.diagnosis.growth import Growth, allowances, who_grew
from gpumem_tui.diagnosis.history import History
from gpumem_tui.diagnosis.overlays import ManualPlan
from gpumem_tui.models import Sample
from gpumem_tui.records import Record
from gpumem_tui.sources.replay import Signalled
from gpumem_tui.units import Unit, said, speaking

MAX_POINTS = 600
HERE = "by you from this screen"
RECORDED = "from the screen that recorded this"
"""Who sent a signal, in words: this screen's `k`, or the `k` of the screen that made the recording read."""
LATE_S = 60.0
"""Kept beyond the "who grew" window, so an exit seen a refresh (or a paused minute) late still has all of it."""


STOP_EXPLAINS_S = 60.0
"""How long after a signal `k` sent an exit is the signal's: a process that outlived it (it was still running
when the screen stopped waiting, and no SIGKILL followed) and ended later ended for its own reason."""


class Marker(Record):
    """Something that happened at `offset_s` seconds into what was watched."""

    offset_s: float
    kind: Literal["process_started", "process_exited", "finding"]
    gpu_index: int | None = None
    pid: int | None = None
    name: str | None = None
    bytes: int | None = None
    """A process's last reading before it exited, or its first after it started."""
    code: FindingCode | None = None
    severity: Severity | None = None
    text: str


class GpuTimeline(Record):
    gpu_index: int
    total_bytes: int | None
    points: list[tuple[float, int]]
    """(offset_s, used bytes); at most MAX_POINTS, each the peak of its stretch so no spike is lost."""


class Forensics(Record):
    start_timestamp: float
    end_offset_s: float
    first_critical_offset_s: float | None
    first_critical: Finding | None
    window_s: float
    timelines: list[GpuTimeline]
    markers: list[Marker]
    who_grew: list[Growth]
    """Unexpected growth first, then the largest; empty when nothing critical was ever found."""
    exits: list[Finding] = []
    """Why each engine that exited (and stayed down) did, as the findings on screen say it."""
    critical_forgotten: bool = False
    """A critical finding was raised before the minutes kept: the first critical here is not the first."""
    notes: list[str] = []
    """What the walked source could not read, as it says it (a node's range read: where it has no samples)."""

    def grew_over_s(self) -> float:
        """How far "who grew" looked back from the first critical finding: the window, or less where
        watching began later (then all that was watched)."""
        return min(self.window_s, self.first_critical_offset_s or 0.0)


class Moment(NamedTuple):
    """One judged sample, kept for what is explained about it later: its findings in each unit they were
    worded in."""

    sample: Sample
    plans: list[EnginePlan]
    worded: dict[Unit, list[Finding]]


class Investigation:
    """Walks samples one by one; `plans` and `findings` are those of the latest sample, the engine exits
    explained first. `keep_s` None keeps the whole walk (a recording); otherwise only the last `keep_s`
    seconds are kept, so memory stays flat (the app). `units`: what the findings' sizes are worded in, each
    sample judged once and worded in each (the app's `g` switches between them without judging); the first
    is the one `findings`, the markers and the forensics speak."""

    def __init__(
        self,
        catalog: Catalog,
        manual: ManualPlan | None,
        thresholds: Thresholds,
        keep_s: float | None = None,
        units: tuple[Unit, ...] = ("GiB",),
    ):
        self.catalog, self.manual, self.thresholds, self.units = catalog, manual, thresholds, units
        self.history = History(window_s=keep_s) if keep_s is not None else History(points=None, window_s=None)
        self.start: float | None = None
        self.totals: dict[int, int | None] = {}
        self.names: dict[tuple[int, int], str | None] = {}
        self.markers: deque[Marker] = deque()
        self.open_findings: set[tuple] = set()
        self.criticals: deque[tuple[float, Finding, Moment]] = deque()
        """Where a critical finding was first raised (offset, the finding, the moment), oldest first."""
        self.critical_forgotten = False
        """Whether a critical onset fell out of the minutes kept."""
        self.alive: dict[str, Moment] = {}
        """Endpoint -> the last sample in which its processes held GPU memory."""
        self.exits: dict[str, dict[Unit, Finding]] = {}
        """Endpoint -> why it exited, in each unit."""
        self.previous: Sample | None = None
        self.stops: dict[int, Stopped] = {}
        """Pid -> the last signal `k` sent it: its exit is said as stopped, not as a crash."""
        self.followed: tuple[list[Signalled], str] | None = None
        """A recording's events as its reader reads them, and who sent them (`follow`)."""
        self.taken = 0
        """How many of them were taken."""
        self.offset = 0.0
        self.plans: list[EnginePlan] = []
        self.worded: dict[Unit, list[Finding]] = {unit: [] for unit in units}
        """The latest sample's findings, in each unit."""

    @property
    def diagnosed(self) -> list[Finding]:
        return self.worded[self.units[0]]

    @property
    def findings(self) -> list[Finding]:
        """The latest sample's findings with the exit explanations, most severe first; an explained exit
        replaces its endpoint's plain 'does not answer'."""
        return self.findings_in(self.units[0])

    def findings_in(self, unit: Unit) -> list[Finding]:
        """`findings`, worded in `unit` (one of `units`)."""
        exits = {url: worded[unit] for url, worded in self.exits.items()}
        diagnosed = [f for f in self.worded[unit] if not (f.code == "engine_down" and f.endpoint in exits)]
        return sorted([*exits.values(), *diagnosed], key=lambda f: -SEVERITY_ORDER[f.severity])

    def past(self, sample: Sample, until_s: float | None) -> bool:
        """Whether the sample lies beyond `until_s` seconds into the walk."""
        return until_s is not None and self.start is not None and sample.timestamp - self.start > until_s

    def signalled(self, event: Signalled, by: str) -> None:
        """A signal `k` sent; one refused or sent to nothing (`failed`, `gone`) stops nothing."""
        if event.outcome in ("ended", "running"):
            self.stops[event.pid] = Stopped(event.pid, event.signal, event.timestamp, by)

    def follow(self, events: list[Signalled], by: str) -> None:
        """A recording's events, a list its reader fills as it reads: each is taken before the first sample
        after it, the one where its process is gone."""
        self.followed = (events, by)

    def _take_events(self, until: float) -> None:
        events, by = self.followed or ([], "")
        while self.taken < len(events) and events[self.taken].timestamp <= until:
            self.signalled(events[self.taken], by)
            self.taken += 1

    def _stop_of(self, pids: Iterable[int], until: float) -> Stopped | None:
        """The signal `k` sent one of `pids` within STOP_EXPLAINS_S before `until`, the latest; None when none
        was (an engine that outlived the signal and died later, or a pid taken since, ended for its own
        reason)."""
        stops = [
            stop
            for pid in pids
            if (stop := self.stops.get(pid)) and stop.timestamp <= until <= stop.timestamp + STOP_EXPLAINS_S
        ]
        return max(stops, key=lambda stop: stop.timestamp, default=None)

    def add(self, sample: Sample) -> None:
        self._take_events(sample.timestamp)
        self.start = sample.timestamp if self.start is None else self.start
        self.offset = sample.timestamp - self.start
        self.history.add(sample)
        for gpu in sample.gpus:
            self.totals[gpu.index] = gpu.memory_total_bytes or self.totals.get(gpu.index)
        with speaking(self.units[0]):  # the markers' words
            self._processes(sample)
        self.rejudge(sample)
        self._exits(sample)
        self._mark_findings(self._markable(), Moment(sample, self.plans, self.worded))
        self._forget()
        self.previous = sample

    def rejudge(self, sample: Sample | None = None) -> None:
        """Plans and findings of `sample` (default: the latest), after the manual plan changed."""
        sample = sample or self.previous
        if sample is not None:
            self.plans = engine_plans(sample, self.catalog, self.manual)
            self.worded = {}
            situation = Situation(self.plans, sample, self.history, self.thresholds)  # one for every unit
            for unit in self.units:
                with speaking(unit):
                    self.worded[unit] = findings_of(situation)

    def _processes(self, sample: Sample) -> None:
        now = {(p.gpu_index, p.pid): p for p in sample.processes}
        before = {(p.gpu_index, p.pid): p for p in self.previous.processes} if self.previous else {}
        for key, process in now.items():
            self.names[key] = process.name or self.names.get(key)
            if self.previous is not None and key not in before:
                self._marker("process_started", key, process.gpu_memory_bytes, "started")
        for key, process in before.items():
            if key not in now:
                self._marker("process_exited", key, process.gpu_memory_bytes, self._exit_words(*key, sample.timestamp))

    def _exit_words(self, gpu_index: int, pid: int, now: float) -> str:
        """'stopped by you from this screen (SIGTERM at ...)' when `k` signalled it; else 'exited', and 'likely
        out of memory' when its card was nearly full just before."""
        stop = self._stop_of([pid], now)
        if stop is not None:
            return stop.words()
        gpu = next((g for g in self.previous.gpus if g.index == gpu_index), None) if self.previous else None
        free = free_bytes(gpu) if gpu else None
        if gpu and gpu.lost:
            return "exited (its GPU was lost)"
        if (
            gpu
            and free is not None
            and gpu.memory_total_bytes
            and free < self.thresholds.headroom_critical_fraction * (gpu.memory_total_bytes)
        ):
            return f"exited with {said(free)} free on GPU {gpu_index} just before: likely out of memory"
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

    def _markable(self) -> list[Finding]:
        """The findings the timeline marks: as judged, but an engine that `k` stopped marked as stopped, not as
        one that does not answer (a crash's exit is marked as judged: its explanation is in its finding)."""
        stopped = {url: f[self.units[0]] for url, f in self.exits.items() if f[self.units[0]].severity != "critical"}
        kept = [f for f in self.diagnosed if not (f.code == "engine_down" and f.endpoint in stopped)]
        return [*stopped.values(), *kept]

    def _mark_findings(self, findings: list[Finding], moment: Moment) -> None:
        keys = set()
        for finding in findings:
            key = (*finding.key, finding.severity)  # a finding that turns critical is marked again
            keys.add(key)
            if key in self.open_findings or finding.severity == "info":
                continue
            if finding.severity == "critical":
                self.criticals.append((self.offset, finding, moment))
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

    def _exits(self, sample: Sample) -> None:
        """Note each engine whose processes hold memory; explain, once, each that was and is gone."""
        present = {p.pid for p in sample.processes}
        endpoints = {e.url: e for e in sample.engines}
        for endpoint in sample.engines:
            if present & set(endpoint.pids):
                self.alive[endpoint.url] = Moment(sample, self.plans, self.worded)
                self.exits.pop(endpoint.url, None)
            elif endpoint.state == "ok":
                self.exits.pop(endpoint.url, None)
        for url, moment in self.alive.items():
            status = endpoints.get(url)
            if url in self.exits or (status is not None and status.state == "ok"):
                continue
            if not present & _pids(moment, url):
                self.exits[url] = {}
                for unit in self.units:
                    with speaking(unit):
                        self.exits[url][unit] = self.explain_exit(url, moment, sample, unit)

    def explain_exit(self, url: str, moment: Moment, now: Sample, unit: Unit) -> Finding:
        """The `engine_exited` finding: who grew in the window before the engine was last seen alive, its
        tightest GPU's free memory then, and the findings active then (as worded in `unit`)."""
        last = moment.sample
        pids = _pids(moment, url)
        stop = self._stop_of(pids, now.timestamp)
        gpus = [g for g in last.gpus if g.index in {p.gpu_index for p in last.processes if p.pid in pids}]
        frees = [(g.index, free) for g in gpus if (free := free_bytes(g)) is not None]
        window = self.thresholds.forensics_window_s
        grew = self.who_grew_before(moment, last.timestamp - window)
        watched = self.history.first_timestamp
        span = min(window, last.timestamp - watched) if watched is not None else window
        culprits = [g for g in grew if g.unexpected_bytes >= self.thresholds.foreign_min_bytes]
        active = [f for f in moment.worded[unit] if f.severity != "info" and f.endpoint != url]
        tightest = min(frees, key=lambda pair: pair[1]) if frees else None
        totals = {g.index: g.memory_total_bytes for g in gpus}
        low = tightest is not None and tightest[1] < self.thresholds.headroom_critical_fraction * (
            totals[tightest[0]] or 0
        )
        held = {p.gpu_index for p in last.processes if p.pid in pids}
        lost = sorted({g.index for g in [*last.gpus, *now.gpus] if g.lost and g.index in held})
        plan = next((plan for plan in moment.plans if plan.endpoint == url), None)
        model = measured_facts(plan).model if plan else None
        kind = next((r.engine for e in last.engines if e.url == url for r in e.records), None)
        engine = Exited(url, model, [g.index for g in gpus], last.timestamp, now.timestamp, kind)
        if stop is not None:
            return engine_stopped(engine, stop)
        return engine_exited(engine, span, grew, culprits, tightest, active, low, lost, span < window)

    def who_grew_before(self, moment: Moment, since: float) -> list[Growth]:
        allowed = allowances(moment.plans, moment.sample, self.history, self.thresholds)
        return who_grew(self.history, self.names, since, moment.sample.timestamp, allowed)

    def _forget(self) -> None:
        """Drop what fell out of the history kept: markers, critical onsets, names of gone processes."""
        first = self.history.first_timestamp
        if self.history.window_s is None or first is None or self.start is None:
            return
        kept_from = first - self.start
        while self.markers and self.markers[0].offset_s < kept_from:
            self.markers.popleft()
        while self.criticals and self.criticals[0][0] < kept_from:
            self.criticals.popleft()
            self.critical_forgotten = True
        for key in [k for k in self.names if k not in self.history.process_points]:
            del self.names[key]


def memory_window_s(thresholds: Thresholds) -> float:
    """Seconds of samples the app keeps for forensics: the "who grew" window and a margin."""
    return thresholds.forensics_window_s + LATE_S


def _pids(moment: Moment, url: str) -> set[int]:
    return next((set(e.pids) for e in moment.sample.engines if e.url == url), set())


def investigate(
    samples: Iterable[Sample],
    catalog: Catalog,
    manual: ManualPlan | None = None,
    thresholds: Thresholds | None = None,
    until_s: float | None = None,
    events: list[Signalled] | None = None,
) -> Forensics | None:
    """Walk a recording (up to `until_s` seconds into it); None when it holds no samples. `events`: the
    recording's signals as its reader reads them (`RecordingReader.events`)."""
    walk = Investigation(catalog, manual, thresholds or Thresholds())
    walk.follow([] if events is None else events, RECORDED)  # the reader's own list: it fills as it reads
    for sample in samples:
        if walk.past(sample, until_s):
            break
        walk.add(sample)
    return None if walk.start is None else result(walk)


def grew_over(forensics: Forensics) -> str:
    """`the 10 s before it (all that was watched)`: the stretch "who grew" measured, which ends at the first
    critical finding (an engine's exit finding measures up to when the engine was last seen)."""
    seconds = forensics.grew_over_s()
    clipped = " (all that was watched)" if seconds < forensics.window_s else ""
    return f"the {seconds:,.0f} s before it{clipped}"


def nobody_grew(forensics: Forensics) -> str:
    """Why "who grew" lists nobody: nobody did, or the first critical finding came on the first sample."""
    if not forensics.first_critical_offset_s:
        return "Who grew before it cannot be told: it was raised on the first sample, with nothing before it."
    return f"Nobody grew in {grew_over(forensics)}."


def no_samples(notes: list[str]) -> str:
    """Why a walk found nothing, in words: no samples, and what its source said of them (a range read's gaps)."""
    return "no samples" + (f": {'; '.join(notes)}" if notes else "")


def result(walk: Investigation) -> Forensics:
    """What the walk found; offsets count from the oldest sample it still keeps."""
    first = walk.history.first_timestamp
    assert first is not None and walk.start is not None  # asked only after a sample was added
    shift = first - walk.start
    critical_at, critical, moment = walk.criticals[0] if walk.criticals else (None, None, None)
    timelines = [
        GpuTimeline(gpu_index=i, total_bytes=walk.totals.get(i), points=_thin([(t - first, b) for t, b in points]))
        for i, points in sorted(walk.history.gpu_points.items())
    ]
    window = walk.thresholds.forensics_window_s
    with speaking(walk.units[0]):
        grew = [] if moment is None else walk.who_grew_before(moment, moment.sample.timestamp - window)
    return Forensics(
        start_timestamp=first,
        end_offset_s=walk.offset - shift,
        first_critical_offset_s=None if critical_at is None else critical_at - shift,
        first_critical=critical,
        window_s=window,
        timelines=timelines,
        markers=[m.model_copy(update={"offset_s": m.offset_s - shift}) for m in walk.markers],
        who_grew=grew,
        exits=[worded[walk.units[0]] for worded in walk.exits.values()],
        critical_forgotten=walk.critical_forgotten,
    )


def _thin(points: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """At most MAX_POINTS: each stretch keeps its highest reading (an OOM is a peak)."""
    if len(points) <= MAX_POINTS:
        return points
    stride = -(-len(points) // MAX_POINTS)
    return [max(points[i : i + stride], key=lambda p: p[1]) for i in range(0, len(points), stride)]
