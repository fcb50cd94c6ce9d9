"""Node: one node's state on its screen: the feed, the judge's investigation, the latest sample judged, and
what the keys change (pause, unit, interval, recording). No Textual: the node screen (screens/main.py) runs
the refreshes, draws `view()` and says what these methods return."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from gpumem_tui.app.view import Header, Judged, View, build_view, lay_out
from gpumem_tui.cuda_order import index_note
from gpumem_tui.diagnosis.autoplan import as_manual, drawn_plans, plan_by_gpu
from gpumem_tui.diagnosis.findings import Finding
from gpumem_tui.diagnosis.findings.node import refresh_failed
from gpumem_tui.diagnosis.forensics import (
    HERE,
    RECORDED,
    Forensics,
    Investigation,
    investigate,
    memory_window_s,
    no_samples,
    result,
)
from gpumem_tui.diagnosis.history import History
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.diagnosis.overlays import ManualPlan
from gpumem_tui.models import Sample
from gpumem_tui.sources.feed import Feed, Past
from gpumem_tui.sources.replay import Recorder, RecordingError, RecordingReader, Signalled
from gpumem_tui.text import literal
from gpumem_tui.units import Unit

INTERVALS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
UNITS: tuple[Unit, ...] = ("GB", "GiB")
"""What `g` switches between; each sample's findings are worded in both, so a key only draws again."""
Load = Callable[[], Forensics | str | None]
"""A forensics read: what it found, or in words why it found nothing."""


class Node:
    """Built from explicit inputs so the CLI, the fleet screen and the tests make it the same way."""

    def __init__(
        self,
        feed: Feed,
        judge: Judge,
        interval_s: float = 1.0,
        record_path: str | None = None,
        clock: Callable[[], float] = time.time,
        poll: bool = True,
        also: Callable[[list[Finding]], list[Finding]] | None = None,
    ):
        """`also`: what else judges each sample's findings (a node read from Prometheus: the fleet's own findings
        about it, diagnosis/fleet_node.judge_node), so the screen says what `check` says of the same source."""
        self.feed, self.judge, self.also = feed, judge, also
        self.interval_s, self.clock, self.poll, self.record_path = interval_s, clock, poll, record_path
        self.investigation = Investigation(
            judge.catalog, judge.plan, judge.thresholds, memory_window_s(judge.thresholds), UNITS
        )
        """The last minutes, judged sample by sample: the findings, why an engine exited, `f` off a recording."""
        self.investigation.follow(feed.signals(), RECORDED)  # a replay: the signals the recorder's screen sent
        self.sample: Sample | None = None
        self.judged = Judged(sample=None)
        """The latest sample judged (in the refresh worker): what every key draws again."""
        self._judging = threading.Lock()
        """Held while `investigation` changes (a sample judged, a plan applied) or is read whole (forensics)."""
        self._last: tuple[Sample, Judged] | None = None
        """The last sample judged and its judgement, until a plan is applied."""
        self.unit: Unit = "GB"
        self.paused = False
        self.last_error: str | None = None
        self.ended_by: Exception | None = None
        """The first read's failure that ended a node opened alone (`first_read_ends`): the command says it."""
        self.recorder: Recorder | None = None
        self._index_noted = False
        """Whether this node's GPU numbering was looked at: the note on CUDA's numbers is said once."""

    @property
    def history(self) -> History:
        return self.investigation.history

    def judge_sample(self, sample: Sample) -> Judged:
        """Once per sample, off the UI thread: plans, findings, and the GPUs and engines laid out against them.
        A sample equal to the last one judged (a replay between two recorded samples, a node whose Prometheus
        has not scraped again) is not judged again, nor added to the history twice: its judgement stands."""
        with self._judging:
            if self._last is not None and self._last[0] == sample:
                return self._last[1]
            self.investigation.add(sample)
            judged = self._laid_out(sample)
            self._last = (sample, judged)
            return judged

    def _laid_out(self, sample: Sample) -> Judged:
        """The latest judgement of `sample`, laid out (the caller holds `_judging`)."""
        watch, also = self.investigation, self.also or list
        worded = {unit: also(watch.findings_in(unit)) for unit in UNITS}
        return lay_out(sample, watch.history, plan_by_gpu(watch.plans), worded[UNITS[0]], watch.plans, worded)

    def took(self, sample: Sample, judged: Judged) -> str | None:
        """A refresh landed; the note on CUDA's GPU numbers when this is the first read of this very node."""
        self.sample, self.judged, self.last_error = sample, judged, None
        if not self.feed.live or sample.source != "nvml" or self._index_noted:
            return None
        self._index_noted = True  # this node, read now: not a simulation, nor a recording of a node
        return index_note(os.environ, [gpu.name for gpu in sample.gpus])

    def first_read_ends(self, error: Exception) -> bool:
        """Whether `error`, before any sample, ends the screen (the feed says nothing will come); kept to say."""
        if self.sample is not None or not self.feed.ends_first_read(error):
            return False
        self.ended_by = error
        return True

    def view(self) -> View:
        """The latest judgement with the node's state: nothing is judged here."""
        failed = refresh_failed(self.last_error) if self.last_error else None
        now = self.now()
        age = max(0.0, now - self.sample.timestamp) if self.sample and self.feed.live else None
        header = Header(
            sample=self.sample,
            source_label=self.feed.label,
            age_s=age,
            paused=self.paused,
            recording=str(self.recorder.path) if self.recorder else None,
            unit=self.unit,
            interval_s=self.interval_s,
        )
        return build_view(self.judged, header, failed)

    def now(self) -> float:
        """The feed's time (a demo's simulated clock), else the app's clock."""
        now = self.feed.now()
        return self.clock() if now is None else now

    def apply_plan(self, plan: ManualPlan) -> None:
        """The planner screen's plan becomes the manual overlay."""
        with self._judging:
            self.judge.plan = self.investigation.manual = plan
            self.investigation.rejudge()
            self._last = None  # judged against the old plan
            if self.sample is not None:
                self.judged = self._laid_out(self.sample)

    def plan_to_edit(self, gpu_index: int | None) -> ManualPlan | None:
        """What the planner screen opens on: a plan set there before, else what the engine on GPU `gpu_index`
        runs (None: the first GPU an engine is planned on), else None: nothing runs there."""
        manual = self.judge.plan
        if manual is not None and manual.source == "planner screen":
            return manual
        drawn = drawn_plans(self.judged.plans)
        index = min(drawn, default=None) if gpu_index is None else gpu_index
        plan = drawn.get(index) if index is not None else None
        return as_manual(plan) if plan is not None else None

    def node_gpu(self) -> str | None:
        """The catalog key of this node's first answering card, by its NVML name."""
        card = next((g for g in self.sample.gpus if not g.lost and g.name), None) if self.sample else None
        spec = self.judge.catalog.gpu_by_nvml_name(card.name) if card and card.name else None
        return spec.key if spec else None

    def switch_unit(self) -> Unit:
        self.unit = "GiB" if self.unit == "GB" else "GB"
        return self.unit

    def switch_pause(self) -> None:
        """A demo or a replay holds its clock too, so nothing is skipped on resume."""
        self.paused = not self.paused
        if self.paused:
            self.feed.pause()
        else:
            self.feed.resume()

    def faster(self) -> float:
        self.interval_s = max((i for i in INTERVALS if i < self.interval_s), default=INTERVALS[0])
        return self.interval_s

    def slower(self) -> float:
        self.interval_s = min((i for i in INTERVALS if i > self.interval_s), default=INTERVALS[-1])
        return self.interval_s

    def start_recording(self) -> str:
        """Where it records to; RecordingRefused, in words, when the file cannot be opened."""
        path = self.record_path or f"gpumem-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
        try:
            self.recorder = Recorder(Path(path))
        except (OSError, ValueError) as exc:
            raise RecordingRefused(f"cannot record to {literal(path)}: {literal(str(exc))}") from exc
        return path

    def stop_recording(self) -> str:
        """The file the recording went to."""
        recorder, self.recorder = self.recorder, None
        if recorder is None:
            return ""
        recorder.close()
        return str(recorder.path)

    def record(self, sample: Sample) -> str | None:
        """The sample in the recording, if one is on; why the recording stopped, if writing failed."""
        return self._written(lambda recorder: recorder.write(sample))

    def note(self, event: Signalled) -> str | None:
        """An event (a signal sent from the screen) in the recording, as `record`; its process's exit is said as
        stopped from this screen."""
        with self._judging:
            self.investigation.signalled(event, HERE)
        return self._written(lambda recorder: recorder.note(event))

    def _written(self, write: Callable[[Recorder], None]) -> str | None:
        """A full disk or a vanished mount stops the recording, never the app: why it stopped, if it did."""
        if self.recorder is None:
            return None
        try:
            write(self.recorder)
        except (OSError, RecordingError) as exc:
            self.stop_recording()
            return str(exc)
        return None

    def forensics(self) -> tuple[str, Load] | None:
        """What forensics reads and how: the whole recording on a replay, the feed's past where it has one (a
        node's history in Prometheus), else the minutes kept in memory; None before the first sample."""
        path, past = self.feed.path, self.feed.past()
        if path is not None:
            return f"{path}", recording(path, self.judge)
        if past is not None:
            return past.what, walked(past, self.judge)
        if self.sample is None:
            return None
        with self._judging:  # the worker adds the next sample to this history
            found = result(self.investigation)
        return "the minutes kept in memory", lambda: found

    async def close(self) -> None:
        if self.recorder:
            self.recorder.close()
        await self.feed.aclose()


class RecordingRefused(Exception):
    """The recording file cannot be opened: the words the screen says."""


def recording(path: Path, judge: Judge) -> Load:
    """Walks a whole recording, judged as the app judges."""

    def load() -> Forensics | None:
        reader = RecordingReader(path)
        return investigate(reader, judge.catalog, judge.plan, judge.thresholds, events=reader.events)

    return load


def walked(past: Past, judge: Judge) -> Load:
    """Reads a feed's past (a node's range read) and walks it, judged as the app judges; what the read could
    not say (its gaps) goes with what the walk found, or says why there was nothing to walk."""

    def load() -> Forensics | str:
        walk = past.read()
        found = investigate(walk, judge.catalog, judge.plan, judge.thresholds)
        if found is None:
            return no_samples(walk.warnings)
        return found.model_copy(update={"notes": list(walk.warnings)})

    return load
