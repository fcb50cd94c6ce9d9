"""DetailsScreen: every field of the focused GPU, or the sheet of the process under the table's cursor."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

from gpumem_tui.app.stopping import Target, target
from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.app.widgets.process_table import ProcessTable
from gpumem_tui.diagnosis.findings.exit import clock
from gpumem_tui.models import Sample
from gpumem_tui.text import literal
from gpumem_tui.units import Unit, fmt


class DetailsScreen(ModalScreen[None]):
    """A read-only sheet; escape, enter or q closes it (its border says so). Sizes are in the node's unit; `g`
    switches it here as on the monitor (`switch_unit`, which gives the new unit), and the sheet is drawn again
    (from the sample it was opened on)."""

    BINDINGS = [Binding("escape,enter,q", "dismiss", "close"), Binding("g", "units", "GB/GiB")]

    def __init__(self, sample: Sample, focused: Widget | None, unit: Unit, switch_unit: Callable[[], Unit]):
        super().__init__()
        self.sample, self.focused_then, self.switch_unit = sample, focused, switch_unit
        self.body = _details(sample, focused, unit)

    def compose(self) -> ComposeResult:
        box = VerticalScroll(id="details-box")
        box.border_subtitle = "escape, enter or q: close    g: GB/GiB"
        with box:
            yield Static(self.body, id="details-text")

    def action_units(self) -> None:
        self.body = _details(self.sample, self.focused_then, self.switch_unit())
        self.query_one("#details-text", Static).update(self.body)


def _details(sample: Sample, focused: Widget | None, unit: Unit) -> Table | Text:
    row = focused.current() if isinstance(focused, ProcessTable) else None
    process = target(sample, row[0]) if row else None
    if process is not None:
        return _process_sheet(process, sample, unit)
    index = focused.index if isinstance(focused, GpuCard) else 0
    card = next((g for g in sample.gpus if g.index == index), None)
    if card is None:
        return Text("Nothing selected: focus a GPU (tab) or a process row, then press enter.")
    return _sheet(f"GPU {index}", card.model_dump(), unit)


def _process_sheet(process: Target, sample: Sample, unit: Unit) -> Table:
    """A process as a person reads it: who and what it is, since when, what it holds on each GPU, the engine
    it serves, and its command line wrapped. Outside text literally."""
    first = process.first
    table = Table(
        title=Text(f"Process {process.pid}: {process.name}", style="bold"),
        title_justify="left",
        box=None,
        show_header=False,
        expand=True,
    )
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold", ratio=1)
    for name, value in (
        ("name", process.name),
        ("pid", str(process.pid)),
        ("user", process.user),
        ("started", "n/a" if first.started is None else clock(first.started)),
        ("engine", _engine_of(process.pid, sample)),
        ("GPU memory", process.held(unit, "\n")),
        ("host RSS", fmt(first.host_rss_bytes, unit, 2)),
        ("CPU", "n/a" if first.cpu_percent is None else f"{first.cpu_percent:.0f} %"),
        ("pod", literal(first.pod, "none")),
        ("command", process.command),
    ):
        table.add_row(Text(name), Text(value))
    return table


def _engine_of(pid: int, sample: Sample) -> str:
    """The engine endpoint that names the pid: its kind, model and address."""
    for endpoint in sample.engines:
        if pid in endpoint.pids:
            models = ", ".join(literal(r.model) for r in endpoint.records if r.model) or "a model not read yet"
            kind = endpoint.records[0].engine if endpoint.records else "an engine"
            return f"{kind} serving {models} at {literal(endpoint.url)}"
    return "none (no engine endpoint names this pid)"


def _sheet(title: str, fields: dict, unit: Unit) -> Table:
    table = Table(title=Text(title, style="bold"), title_justify="left", box=None, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for name, value in fields.items():
        table.add_row(Text(name), Text(_shown(name, value, unit)))
    return table


def _shown(name: str, value, unit: Unit) -> str:
    """A field as the sheet shows it, outside text literally: a size in the app's unit with its bytes; a list
    item by item, a record in it (a MIG instance) on a line of its own, field by field, its sizes too."""
    if name.endswith("_bytes") and isinstance(value, int):
        return f"{fmt(value, unit, 2)} ({value:,} bytes)"
    if isinstance(value, dict):
        return "; ".join(f"{literal(key)} {_shown(key, item, unit)}" for key, item in value.items())
    if isinstance(value, list):
        joint = "\n" if any(isinstance(item, dict) for item in value) else " "
        return joint.join(_shown(name, item, unit) for item in value) if value else "-"
    return "n/a" if value is None else literal(value)
