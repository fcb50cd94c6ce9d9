"""MainScreen: the node's verdict in one line, then GPUs with measured and planned bars, findings, engines
and processes, laid out by priority: the verdict is always on screen, the bars get the width, the findings
the rows that are left, and several GPUs take one line each when their full cards would fill the screen."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from gpumem_tui.app.owner import owner
from gpumem_tui.app.redraw import show, update
from gpumem_tui.app.view import View
from gpumem_tui.app.widgets.bar_legend import BarLegend
from gpumem_tui.app.widgets.engine_card import EngineCard
from gpumem_tui.app.widgets.findings_panel import FindingsPanel
from gpumem_tui.app.widgets.gpu_card import GpuCard, full_height
from gpumem_tui.app.widgets.header_bar import HeaderBar
from gpumem_tui.app.widgets.process_table import ProcessTable
from gpumem_tui.app.widgets.status_line import StatusLine

WIDE_COLUMNS = 140
"""From this width findings and engines sit side by side under the GPUs."""
FIXED_ROWS = 6
"""Rows that are not the body's: header, status line, footer, and the GPU section's title."""
CARD_MARGIN = 1


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
        Binding("escape", "app.leave", "back", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.view: View | None = None
        self.expanded: int | None = None
        """The GPU shown as a full card while the others are one line each."""

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield StatusLine(id="status-line")
        with VerticalScroll(id="body"):
            yield Static("GPUs", classes="section")
            yield Static(id="source-status", classes="status")
            yield Vertical(id="gpus")
            yield BarLegend(id="legend")
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

    def on_data_table_row_selected(self) -> None:
        """Enter on a process row opens its details, as enter on a GPU card does."""
        owner(self).action_details()

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
        self.query_one(StatusLine).show(view.summary, view.level, view.others)
        source_status = self.query_one("#source-status", Static)
        update(source_status, judged.status_text)
        show(source_status, bool(judged.status_text))  # no empty row when every source answers
        self._show_gpus(view)
        self._show_engines(view)
        self.query_one(FindingsPanel).show(view.findings, view.clear)
        if judged.sample is not None:
            self.query_one(ProcessTable).show(judged.sample.processes, judged.engine_pids, view.header.unit)

    def _show_gpus(self, view: View) -> None:
        box = self.query_one("#gpus", Vertical)
        cards = {card.index: card for card in box.query(GpuCard)}
        for gpu in view.judged.gpus:
            card = cards.get(gpu.gpu.index)
            if card is None:
                card = GpuCard(gpu.gpu.index)
                card.show(gpu, view.header.unit)
                box.mount(card)
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
        for card in self.query_one("#gpus", Vertical).query(GpuCard):
            card.compact = fold and card.index != self.expanded
            card.set_class(fold and not card.compact, "-open")

    def _show_engines(self, view: View) -> None:
        box = self.query_one("#engines", Vertical)
        cards = list(box.query(EngineCard))
        engines = view.judged.engines
        for extra in cards[len(engines) :]:
            extra.remove()
        for i, engine in enumerate(engines):
            if i < len(cards):
                cards[i].show(engine)
            else:
                card = EngineCard()
                card.show(engine)
                box.mount(card)
        if not engines:
            if not box.query(".empty"):
                box.mount(Static("No engine endpoint found (add one with --endpoint URL).", classes="empty dim"))
        else:
            for empty in box.query(".empty"):
                empty.remove()
