"""GpuMemApp: the composition root of the TUI. It owns the state; workers fetch; the screen draws."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from textual import work
from textual.app import App
from textual.timer import Timer

from gpumem_tui.app.messages import RefreshFailed, SampleReady
from gpumem_tui.app.screens.help import HelpScreen
from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.app.view import Header, Judged, build_view, lay_out
from gpumem_tui.app.widgets.process_table import ProcessTable
from gpumem_tui.cuda_order import index_note
from gpumem_tui.diagnosis.autoplan import plan_by_gpu
from gpumem_tui.diagnosis.findings import Finding
from gpumem_tui.diagnosis.findings.node import refresh_failed
from gpumem_tui.diagnosis.forensics import Investigation, memory_window_s, result
from gpumem_tui.diagnosis.history import History
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.glyphs import UNICODE, Glyphs
from gpumem_tui.models import Sample
from gpumem_tui.sources.feed import Feed
from gpumem_tui.sources.replay import Recorder, RecordingError
from gpumem_tui.text import literal
from gpumem_tui.units import Unit

INTERVALS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
INTRO_S = 15.0
"""Seconds a demo's opening note stays: long enough to read a description, gone before most stories."""


class GpuMemApp(App[None]):
    """Built from explicit inputs so the CLI and the tests make it the same way."""

    CSS_PATH = Path(__file__).with_name("gpumem.tcss")
    TITLE = "gpumem-tui"
    # The monitor's keys are MainScreen's (`app.*` actions below): a screen on top (the planner's inputs,
    # help, details, forensics) gets its own keys and never these.

    def __init__(
        self,
        feed: Feed,
        judge: Judge,
        interval_s: float = 1.0,
        record_path: str | None = None,
        clock: Callable[[], float] = time.time,
        poll: bool = True,
        theme: str = "textual-dark",
        glyphs: Glyphs = UNICODE,
        back_to: str | None = None,
        also: Callable[[list[Finding]], list[Finding]] | None = None,
    ):
        """`back_to`: what the screen was opened from (`the fleet`): q and escape go back there. `also`: what
        else judges each sample's findings (a node read from Prometheus: the fleet's own findings about it,
        diagnosis/fleet/node.judge_node), so the screen says what `check` says of the same source."""
        super().__init__()
        self.back_to, self.also = back_to, also
        self.glyphs = glyphs
        """What bars, gauges and sparklines are drawn with: Unicode, or ASCII for `--ascii` and non-UTF-8 terminals."""
        self.theme = theme
        self.feed, self.judge = feed, judge
        self.interval_s, self.clock, self.poll = interval_s, clock, poll
        self.investigation = Investigation(
            judge.catalog, judge.plan, judge.thresholds, memory_window_s(judge.thresholds)
        )
        """The last minutes, judged sample by sample: the findings, why an engine exited, `f` off a recording."""
        self.sample: Sample | None = None
        self.judged = Judged(sample=None)
        """The latest sample judged (in the refresh worker): what every key draws again."""
        self._judging = threading.Lock()
        """Held while `investigation` changes (a sample judged, a plan applied) or is read whole (forensics)."""
        self.unit: Unit = "GB"
        self.paused = False
        self.last_error: str | None = None
        self.record_path = record_path
        self.recorder: Recorder | None = None
        self._timer: Timer | None = None
        self._index_noted = False
        """Whether this node's GPU numbering was looked at: the note on CUDA's numbers is said once."""

    def _handle_exception(self, error: Exception) -> None:
        """A crash: the app exits as Textual does, but its traceback (with local variables, which may
        hold outside text) is not printed on the terminal; `gpumem-tui` prints one line and files it."""
        super()._handle_exception(error)
        self._exit_renderables.clear()

    @property
    def history(self) -> History:
        return self.investigation.history

    def on_mount(self) -> None:
        self.push_screen(MainScreen())
        if self.feed.intro:  # a demo says what it shows and when
            self.notify(self.feed.intro, title=literal(self.feed.label), timeout=INTRO_S, markup=False)
        if self.back_to is not None:
            self.notify(f"q or escape: back to {self.back_to}", title=literal(self.feed.label), markup=False)
        if self.record_path:
            self._start_recording()
        self.refresh_now()
        if self.poll:
            self._timer = self.set_interval(self.interval_s, self.refresh_now)

    def refresh_now(self) -> None:
        """Start one refresh unless one is running or the app is paused: polls never overlap."""
        if self.paused or any(w.group == "refresh" and w.is_running for w in self.workers):
            return
        self._refresh()

    @work(group="refresh", exit_on_error=False)
    async def _refresh(self) -> None:
        try:
            sample = await self.feed.sample()
        except Exception as exc:  # noqa: BLE001 - a failed refresh degrades to a message on screen
            self.post_message(RefreshFailed(f"{type(exc).__name__}: {exc}"))
            return
        try:
            judged = await asyncio.to_thread(self._judge, sample)
        except Exception as exc:  # noqa: BLE001 - a fault in the judge stops the app, one line and a file
            self._handle_exception(exc)
            return
        self.post_message(SampleReady(sample, judged))

    def _judge(self, sample: Sample) -> Judged:
        """Once per sample, off the UI thread: plans, findings, and the GPUs and engines laid out against them."""
        with self._judging:
            self.investigation.add(sample)
            return self._laid_out(sample)

    def _laid_out(self, sample: Sample) -> Judged:
        """The latest judgement of `sample`, laid out (the caller holds `_judging`)."""
        watch = self.investigation
        findings = watch.findings if self.also is None else self.also(watch.findings)
        return lay_out(sample, watch.history, plan_by_gpu(watch.plans), findings, watch.plans)

    def on_sample_ready(self, message: SampleReady) -> None:
        self.sample, self.judged, self.last_error = message.sample, message.judged, None
        if self.feed.live and message.sample.source == "nvml" and not self._index_noted:
            self._index_noted = True  # this node, read now: not a simulation, nor a recording of a node
            note = index_note(os.environ, [gpu.name for gpu in message.sample.gpus])
            if note:
                self.notify(note, title="GPU numbers", timeout=INTRO_S, markup=False)
        if self.recorder:
            self._record(message.sample)
        self.redraw()

    def _record(self, sample: Sample) -> None:
        """A full disk or a vanished mount stops the recording, never the app."""
        recorder = self.recorder
        if recorder is None:
            return
        try:
            recorder.write(sample)
        except (OSError, RecordingError) as exc:
            self.notify(f"recording stopped: {literal(str(exc))}", severity="error", markup=False)
            recorder.close()
            self.recorder = None

    def on_refresh_failed(self, message: RefreshFailed) -> None:
        self.last_error = message.error
        self.redraw()

    def redraw(self) -> None:
        """Draw the latest judgement again with the app's state: nothing is judged here."""
        screen = self.screen if isinstance(self.screen, MainScreen) else self.get_screen_main()
        if screen is None:
            return
        failed = None
        if self.last_error:
            failed = refresh_failed(self.last_error)
        now = self.feed.now()
        now = self.clock() if now is None else now
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
        screen.show(build_view(self.judged, header, failed))

    def get_screen_main(self) -> MainScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    def action_leave(self) -> None:
        """Escape on the monitor: back to where it was opened from (the fleet); nothing when opened alone."""
        if self.back_to is not None:
            self.exit()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_planner(self) -> None:
        from gpumem_tui.app.screens.planner import PlannerScreen

        if not isinstance(self.screen, PlannerScreen):
            self.push_screen(PlannerScreen(self.judge.catalog, self.apply_plan, self.judge.plan, self.node_gpu()))

    def node_gpu(self) -> str | None:
        """The catalog key of this node's first answering card, by its NVML name."""
        card = next((g for g in self.sample.gpus if not g.lost and g.name), None) if self.sample else None
        spec = self.judge.catalog.gpu_by_nvml_name(card.name) if card and card.name else None
        return spec.key if spec else None

    def apply_plan(self, plan) -> None:
        """The planner screen's plan becomes the manual overlay."""
        with self._judging:
            self.judge.plan = self.investigation.manual = plan
            self.investigation.rejudge()
            if self.sample is not None:
                self.judged = self._laid_out(self.sample)
        self.notify(f"plan applied: {literal(plan.model.id)}", markup=False)
        self.redraw()

    def action_sort(self) -> None:
        main = self.get_screen_main()
        if main is None:
            return
        table = main.query_one(ProcessTable)
        self.notify(f"processes sorted by {table.next_sort()}", markup=False)
        self.redraw()

    def action_units(self) -> None:
        self.unit = "GiB" if self.unit == "GB" else "GB"
        self.redraw()

    def action_pause(self) -> None:
        """Hold the screen; a demo or a replay holds its clock too, so nothing is skipped on resume."""
        self.paused = not self.paused
        if self.paused:
            self.feed.pause()
        else:
            self.feed.resume()
        self.redraw()

    def action_record(self) -> None:
        if self.recorder:
            self.recorder.close()
            self.notify(f"recording stopped: {literal(str(self.recorder.path))}", markup=False)
            self.recorder = None
        else:
            self._start_recording()
        self.redraw()

    def _start_recording(self) -> None:
        path = self.record_path or f"gpumem-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
        try:
            self.recorder = Recorder(Path(path))
        except (OSError, ValueError) as exc:
            self.notify(f"cannot record to {literal(path)}: {literal(str(exc))}", severity="error", markup=False)
            return
        self.notify(f"recording to {literal(path)}", markup=False)

    def action_faster(self) -> None:
        self._set_interval(max((i for i in INTERVALS if i < self.interval_s), default=INTERVALS[0]))

    def action_slower(self) -> None:
        self._set_interval(min((i for i in INTERVALS if i > self.interval_s), default=INTERVALS[-1]))

    def _set_interval(self, seconds: float) -> None:
        self.interval_s = seconds
        if self._timer is not None:
            self._timer.stop()
            self._timer = self.set_interval(seconds, self.refresh_now)
        self.redraw()

    def action_forensics(self) -> None:
        """The timeline, markers, who grew before the first critical finding and why an engine exited: over
        the whole recording on a replay, the feed's past where it has one (a node's history in Prometheus,
        read in the screen's worker), else over the minutes kept in memory."""
        from gpumem_tui.app.screens.forensics import ForensicsScreen, recording, walked

        path, past = self.feed.path, self.feed.past()
        if path is not None:
            self.push_screen(ForensicsScreen(f"{path}", recording(path, self.judge)))
        elif past is not None:
            self.push_screen(ForensicsScreen(past.what, walked(past, self.judge)))
        elif self.sample is None:
            self.notify("no sample yet: forensics needs a few refreshes of history", markup=False)
        else:
            with self._judging:  # the worker adds the next sample to this history
                found = result(self.investigation)
            self.push_screen(ForensicsScreen("the minutes kept in memory", lambda: found))

    def action_details(self) -> None:
        from gpumem_tui.app.screens.details import DetailsScreen

        if self.sample is not None:
            self.push_screen(DetailsScreen(self.sample, self.screen.focused, self.unit))

    async def on_unmount(self) -> None:
        if self.recorder:
            self.recorder.close()
        await self.feed.aclose()
