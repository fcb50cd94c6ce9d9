"""MainScreen: the node's screen. The verdict in one line, then GPUs with measured and planned bars, findings,
engines and processes, laid out by priority: the verdict is always on screen, the bars get the width, the
findings the rows that are left, and several GPUs take one line each when their full cards would fill the
screen. It refreshes its Node (app/node.py) in a worker of its own, on a timer of its own."""

from __future__ import annotations

import asyncio

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static

from gpumem_tui.app import heap, stopping
from gpumem_tui.app.compositor import PlacedCompositor
from gpumem_tui.app.messages import RefreshFailed, SampleReady
from gpumem_tui.app.node import Node, RecordingRefused
from gpumem_tui.app.redraw import show, update
from gpumem_tui.app.screens.details import DetailsScreen
from gpumem_tui.app.screens.forensics import ForensicsScreen
from gpumem_tui.app.screens.help import HelpScreen
from gpumem_tui.app.screens.stop import StopScreen
from gpumem_tui.app.view import View
from gpumem_tui.app.widgets.bar_legend import BarLegend
from gpumem_tui.app.widgets.engine_card import EngineCard
from gpumem_tui.app.widgets.findings_panel import FindingsPanel
from gpumem_tui.app.widgets.gpu_card import GpuCard, full_height
from gpumem_tui.app.widgets.header_bar import HeaderBar
from gpumem_tui.app.widgets.process_table import ProcessTable
from gpumem_tui.app.widgets.status_line import StatusLine
from gpumem_tui.diagnosis.findings.exit import clock
from gpumem_tui.diagnosis.overlays import ManualPlan
from gpumem_tui.glyphs import Glyphs
from gpumem_tui.models import Sample
from gpumem_tui.text import literal
from gpumem_tui.units import Unit

WIDE_COLUMNS = 140
"""From this width findings and engines sit side by side under the GPUs."""
FIXED_ROWS = 6
"""Rows that are not the body's: header, status line, footer, and the GPU section's title."""
CARD_MARGIN = 1
INTRO_S = 15.0
"""Seconds a demo's opening note stays: long enough to read a description, gone before most stories."""


class MainScreen(Screen):
    """The monitor of one node. Its keys are bound here: while another screen is on top (the planner's
    inputs, help, details, forensics), they are that screen's to take."""

    BINDINGS = [
        # Of two bindings of one key, the first whose action `check_action` allows takes it (and the footer
        # shows it): q quits a node opened alone and goes back where the screen was opened from.
        Binding("q", "close", "quit"),
        Binding("q", "leave", "back"),
        Binding("question_mark,h", "help", "help"),
        Binding("k", "stop", "stop"),
        Binding("k", "why_no_stop", "stop", show=False),
        Binding("p", "planner", "planner"),
        Binding("s", "sort", "sort"),
        Binding("g", "units", "GB/GiB"),
        Binding("f", "forensics", "forensics"),
        Binding("space", "pause", "pause"),
        Binding("r", "record", "record"),
        Binding("plus,equals_sign", "faster", "faster", key_display="+"),
        Binding("minus", "slower", "slower", key_display="-"),
        Binding("enter", "details", "details", show=False),
        Binding("escape", "leave", "back", show=False),
    ]

    def __init__(self, node: Node, glyphs: Glyphs, back_to: str | None = None) -> None:
        """`glyphs`: what bars, gauges and sparklines are drawn with. `back_to`: what the screen was opened from
        (`the fleet`): q and escape go back there; without it q quits."""
        super().__init__()
        self._compositor = PlacedCompositor()  # a repaint below the fold does not place every widget again
        self.node, self.glyphs, self.back_to = node, glyphs, back_to
        self.view: View | None = None
        self.expanded: int | None = None
        """The GPU shown as a full card while the others are one line each."""
        self.stop_wait_s = stopping.WAIT_S
        """How long `k` waits after SIGTERM before it offers SIGKILL."""
        self._ticker: Timer | None = None
        self._gpu_cards: dict[int, GpuCard] = {}
        self._engine_cards: list[EngineCard] = []
        self._no_engine: Static | None = None
        """The cards and the note drawn, kept here: looking them up in the DOM each second cost more than
        handing them their content."""

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield StatusLine(id="status-line")
        with VerticalScroll(id="body"):
            yield Static("GPUs", classes="section")
            yield Static(id="source-status", classes="status")
            yield Vertical(id="gpus")
            yield BarLegend(self.glyphs, id="legend")
            with Horizontal(id="lower"):
                with Vertical(id="findings-panel"):
                    yield Static("Findings", classes="section")
                    yield FindingsPanel(id="findings")
                with Vertical(id="side"):
                    yield Static("Engines", classes="section")
                    yield Vertical(id="engines")
            yield Static("Processes", classes="section")
            yield ProcessTable(id="processes")
        yield Footer()

    def on_mount(self) -> None:
        feed = self.node.feed
        if feed.intro:  # a demo says what it shows and when
            self.notify(feed.intro, title=literal(feed.label), timeout=INTRO_S, markup=False)
        if self.node.record_path:
            self._start_recording()
        self.redraw()  # the first frame: where the numbers will come from, and that none has come yet
        self.refresh_now()
        if self.node.poll:
            self._ticker = self.set_interval(self.node.interval_s, self.refresh_now)

    def refresh_now(self) -> None:
        """Start one refresh unless one is running or the node is paused: polls never overlap."""
        if self.node.paused or any(w.node is self and w.group == "refresh" and w.is_running for w in self.workers):
            return
        self._refresh()

    @work(group="refresh", exit_on_error=False)
    async def _refresh(self) -> None:
        try:
            sample = await self.node.feed.sample()
        except Exception as exc:  # noqa: BLE001 - a failed refresh degrades to a message on screen
            if self.back_to is None and self.node.first_read_ends(exc):
                self.app.exit()  # opened alone on a node that is not there: the command says why
                return
            self.post_message(RefreshFailed(f"{type(exc).__name__}: {exc}"))
            return
        try:
            judged = await asyncio.to_thread(self.node.judge_sample, sample)
        except Exception as exc:  # noqa: BLE001 - a fault in the judge stops the app, one line and a file
            self.app._handle_exception(exc)
            return
        self.post_message(SampleReady(sample, judged))

    def on_sample_ready(self, message: SampleReady) -> None:
        if self.node.sample is None:
            self.call_after_refresh(heap.settle)  # once the first numbers are drawn
        note = self.node.took(message.sample, message.judged)
        if note:
            self.notify(note, title="GPU numbers", timeout=INTRO_S, markup=False)
        for event in self.node.feed.events():  # a recording's signals, as the screen that recorded them said
            self.notify(f"recorded at {clock(event.timestamp)}: {literal(event.said)}", markup=False)
        self._record(message.sample)
        self.redraw()

    def _record(self, sample: Sample) -> None:
        self._say_stopped(self.node.record(sample))

    def _say_stopped(self, why: str | None) -> None:
        """A recording that a failed write stopped."""
        if why is not None:
            self.notify(f"recording stopped: {literal(why)}", severity="error", markup=False)

    def on_refresh_failed(self, message: RefreshFailed) -> None:
        self.node.last_error = message.error
        self.redraw()

    def redraw(self) -> None:
        """Draw the latest judgement again with the node's state: nothing is judged here."""
        self.show(self.node.view())

    def on_data_table_row_selected(self) -> None:
        """Enter on a process row opens its details, as enter on a GPU card does."""
        self.action_details()

    def on_gpu_card_details(self) -> None:
        self.action_details()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:  # noqa: ARG002
        """Which of a key's bindings acts (and shows): q quits alone and goes back from the fleet; `k` acts on
        a process row of a source that can stop processes, else says why it does not."""
        if action == "close":
            return self.back_to is None
        if action == "leave":
            return self.back_to is not None
        if action == "stop":
            return isinstance(self.focused, ProcessTable) and not isinstance(self.node.feed.stopper(), str)
        return True

    def action_close(self) -> None:
        """q on a node opened alone: the app ends."""
        self.app.exit()

    def action_leave(self) -> None:
        """q or escape: back to where the screen was opened from (the fleet)."""
        self.app.clear_notifications()  # what was said of this node is not said over the fleet
        self.dismiss()

    def action_stop(self) -> None:
        """`k` on a process row: ask, then signal it (StopScreen); another user's process is refused here."""
        stopper, row = self.node.feed.stopper(), self.query_one(ProcessTable).current()
        process = stopping.target(self.node.sample, row[0]) if row else None
        if isinstance(stopper, str) or process is None:
            self.action_why_no_stop()
            return
        refused = stopper.refusal(process.first)
        if refused:
            self.notify(refused, title=f"pid {process.pid} not stopped", severity="warning", markup=False)
            return
        self.app.push_screen(StopScreen(process, stopper, self.node.unit, self._stopped, self.stop_wait_s))

    def action_why_no_stop(self) -> None:
        stopper = self.node.feed.stopper()
        if isinstance(stopper, str):
            why = f"k stops a process, but not here: {stopper}"
        elif isinstance(self.focused, ProcessTable):
            why = "k stops the process under the cursor: there is none"
        else:
            why = "k stops the process under the cursor of the process table: tab to it first"
        self.notify(why, markup=False)

    def _stopped(self, outcome: stopping.Outcome) -> None:
        """A signal's outcome: said, written to the recording, and the node read again (its memory goes)."""
        ended = outcome.result in ("ended", "gone")
        self.notify(outcome.said(self.node.unit), severity="information" if ended else "warning", markup=False)
        self._say_stopped(self.node.note(outcome.event(self.node.now(), self.node.unit)))
        self.refresh_now()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.glyphs))

    def action_planner(self) -> None:
        from gpumem_tui.app.screens.planner import PlannerScreen

        node = self.node
        focused = self.focused.index if isinstance(self.focused, GpuCard) else self.expanded
        if not isinstance(self.app.screen, PlannerScreen):
            start = node.plan_to_edit(focused)
            self.app.push_screen(PlannerScreen(node.judge.catalog, self.apply_plan, start, node.node_gpu()))

    def apply_plan(self, plan: ManualPlan) -> None:
        self.node.apply_plan(plan)
        self.notify(f"plan applied: {literal(plan.model.id)}", markup=False)
        self.redraw()

    def action_sort(self) -> None:
        self.notify(f"processes sorted by {self.query_one(ProcessTable).next_sort()}", markup=False)
        self.redraw()

    def switch_unit(self) -> Unit:
        """`g` here or on a sheet over this screen: the unit switched to, the screen drawn in it."""
        unit = self.node.switch_unit()
        self.redraw()
        return unit

    def action_units(self) -> None:
        self.switch_unit()

    def action_pause(self) -> None:
        self.node.switch_pause()
        self.redraw()

    def action_record(self) -> None:
        if self.node.recorder:
            self.notify(f"recording stopped: {literal(self.node.stop_recording())}", markup=False)
        else:
            self._start_recording()
        self.redraw()

    def _start_recording(self) -> None:
        try:
            path = self.node.start_recording()
        except RecordingRefused as refused:
            self.notify(str(refused), severity="error", markup=False)
            return
        self.notify(f"recording to {literal(path)}", markup=False)

    def action_faster(self) -> None:
        self._set_interval(self.node.faster())

    def action_slower(self) -> None:
        self._set_interval(self.node.slower())

    def _set_interval(self, seconds: float) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = self.set_interval(seconds, self.refresh_now)
        self.redraw()

    def action_forensics(self) -> None:
        """The timeline, markers, who grew before the first critical finding and why an engine exited, over
        what the node has to walk (Node.forensics), read in the sheet's worker."""
        found = self.node.forensics()
        if found is None:
            self.notify("no sample yet: forensics needs a few refreshes of history", markup=False)
            return
        what, load = found
        self.app.push_screen(ForensicsScreen(what, load, self.glyphs, self.node.unit, self.switch_unit))

    def action_details(self) -> None:
        sample = self.node.sample
        if sample is not None:
            self.app.push_screen(DetailsScreen(sample, self.focused, self.node.unit, self.switch_unit))

    async def on_unmount(self) -> None:
        await self.node.close()

    def on_resize(self) -> None:
        self.set_class(self.size.width >= WIDE_COLUMNS, "-wide")
        self._fold()

    def on_gpu_card_toggled(self, message: GpuCard.Toggled) -> None:
        """Enter on a one-line GPU shows its full card (the others stay one line); escape folds it again."""
        self.expanded = message.index if message.open else None
        self._fold()

    def show(self, view: View) -> None:
        self.view, judged = view, view.judged
        self.query_one(HeaderBar).show(view.header)
        self.query_one(StatusLine).show(view.verdict, view.others)
        source_status = self.query_one("#source-status", Static)
        update(source_status, judged.status_text)
        show(source_status, bool(judged.status_text))  # no empty row when every source answers
        self._show_gpus(view)
        self._show_engines(view)
        self.query_one(FindingsPanel).show(view.findings, view.clear)
        if judged.sample is not None:
            self.query_one(ProcessTable).show(judged.sample.processes, judged.engine_pids, view.header.unit)

    def _show_gpus(self, view: View) -> None:
        cards = self._gpu_cards
        for gpu in view.judged.gpus:
            card = cards.get(gpu.gpu.index)
            if card is None:
                card = cards[gpu.gpu.index] = GpuCard(gpu.gpu.index, self.glyphs)
                card.show(gpu, view.header.unit)
                self.query_one("#gpus", Vertical).mount(card)
            else:
                card.show(gpu, view.header.unit)
        self._fold()

    def _fold(self) -> None:
        """One line per GPU when the full cards would take more than half the rows below the header."""
        if self.view is None:
            return
        width = max(1, self.size.width - 4)
        rows = sum(full_height(g.overlay is not None, len(g.rows), width) + CARD_MARGIN for g in self.view.judged.gpus)
        fold = len(self.view.judged.gpus) > 1 and rows > (self.size.height - FIXED_ROWS) / 2
        for card in self._gpu_cards.values():
            card.compact = fold and card.index != self.expanded
            card.set_class(fold and not card.compact, "-open")

    def _show_engines(self, view: View) -> None:
        box, cards, engines = self.query_one("#engines", Vertical), self._engine_cards, view.judged.engines
        for extra in cards[len(engines) :]:
            extra.remove()
        del cards[len(engines) :]
        for i, engine in enumerate(engines):
            if i < len(cards):
                cards[i].show(engine)
            else:
                card = EngineCard(self.glyphs)
                card.show(engine)
                cards.append(card)
                box.mount(card)
        if not engines and self._no_engine is None:
            sample = view.judged.sample
            said = (
                "No engine of this node in Prometheus."
                if sample is not None and sample.source == "prometheus"
                else "No engine endpoint found (add one with --endpoint URL)."
            )
            self._no_engine = Static(said, classes="empty dim")
            box.mount(self._no_engine)
        elif engines and self._no_engine is not None:
            self._no_engine.remove()
            self._no_engine = None
