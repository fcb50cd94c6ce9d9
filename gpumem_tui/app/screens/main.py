"""MainScreen: GPUs with measured and planned bars, engines, findings and processes on one screen."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from gpumem_tui.app.quiet import update
from gpumem_tui.app.view import View
from gpumem_tui.app.widgets.engine_card import EngineCard
from gpumem_tui.app.widgets.findings_panel import FindingsPanel
from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.app.widgets.header_bar import HeaderBar
from gpumem_tui.app.widgets.process_table import ProcessTable

WIDE_COLUMNS = 140


class MainScreen(Screen):
    """The monitor. It only draws the View it is handed; the app owns the data and the actions its keys run,
    but the keys are bound here: while another screen is on top, they are that screen's to take."""

    BINDINGS = [
        Binding("q", "app.quit", "quit"),
        Binding("question_mark,h", "app.help", "help"),
        Binding("p", "app.planner", "planner"),
        Binding("s", "app.sort", "sort"),
        Binding("g", "app.units", "GB/GiB"),
        Binding("space", "app.pause", "pause"),
        Binding("r", "app.record", "record"),
        Binding("plus,equals_sign", "app.faster", "faster", key_display="+"),
        Binding("minus", "app.slower", "slower", key_display="-"),
        Binding("enter", "app.details", "details", show=False),
        Binding("f", "app.forensics", "forensics", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        with VerticalScroll(id="body"):
            with Horizontal(id="top"):
                with Vertical(id="gpu-panel"):
                    yield Static("GPUs", classes="section")
                    yield Static(id="source-status", classes="status")
                    yield Vertical(id="gpus")
                with Vertical(id="side"):
                    yield Static("Engines", classes="section")
                    yield Vertical(id="engines")
                    yield Static("Findings", classes="section")
                    yield FindingsPanel(id="findings")
            yield Static("Processes", classes="section")
            yield ProcessTable(id="processes")
        yield Footer()

    def on_data_table_row_selected(self) -> None:
        """Enter on a process row opens its details, as enter on a GPU card does."""
        self.app.action_details()

    def on_resize(self) -> None:
        self.set_class(self.size.width >= WIDE_COLUMNS, "-wide")

    def show(self, view: View) -> None:
        self.query_one(HeaderBar).show(
            view.sample, view.source_label, view.age_s, view.paused, view.recording, view.unit, view.interval_s
        )
        update(self.query_one("#source-status", Static), view.status_text)
        self._show_gpus(view)
        self._show_engines(view)
        self.query_one(FindingsPanel).show(view.findings, compared=view.compared)
        if view.sample is not None:
            self.query_one(ProcessTable).show(view.sample.processes, view.engine_pids, view.unit)

    def _show_gpus(self, view: View) -> None:
        box = self.query_one("#gpus", Vertical)
        cards = {card.index: card for card in box.query(GpuCard)}
        for gpu in view.gpus:
            card = cards.get(gpu.gpu.index)
            if card is None:
                card = GpuCard(gpu.gpu.index)
                card.show(*gpu.args(view.unit))
                box.mount(card)
            else:
                card.show(*gpu.args(view.unit))

    def _show_engines(self, view: View) -> None:
        box = self.query_one("#engines", Vertical)
        cards = list(box.query(EngineCard))
        for extra in cards[len(view.engines) :]:
            extra.remove()
        for i, engine in enumerate(view.engines):
            if i < len(cards):
                cards[i].show(*engine)
            else:
                card = EngineCard()
                card.show(*engine)
                box.mount(card)
        if not view.engines:
            if not box.query(".empty"):
                box.mount(Static("No engine endpoint found (add one with --endpoint URL).", classes="empty dim"))
        else:
            for empty in box.query(".empty"):
                empty.remove()
