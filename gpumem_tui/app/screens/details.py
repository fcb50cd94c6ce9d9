"""DetailsScreen: every field of the focused GPU, or of the process under the table's cursor."""

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

from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.app.widgets.process_table import ProcessTable
from gpumem_tui.models import Sample
from gpumem_tui.text import literal
from gpumem_tui.units import Unit, fmt


class DetailsScreen(ModalScreen[None]):
    """A read-only sheet; escape or enter closes it. Sizes are in the node's unit; `g` switches it here as on
    the monitor (`switch_unit`, which gives the new unit), and the sheet is drawn again (from the sample it was
    opened on)."""

    BINDINGS = [Binding("escape,enter,q", "dismiss", "close"), Binding("g", "units", "GB/GiB")]

    def __init__(self, sample: Sample, focused: Widget | None, unit: Unit, switch_unit: Callable[[], Unit]):
        super().__init__()
        self.sample, self.focused_then, self.switch_unit = sample, focused, switch_unit
        self.body = _details(sample, focused, unit)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="details-box"):
            yield Static(self.body, id="details-text")

    def action_units(self) -> None:
        self.body = _details(self.sample, self.focused_then, self.switch_unit())
        self.query_one("#details-text", Static).update(self.body)


def _details(sample: Sample, focused: Widget | None, unit: Unit) -> Table | Text:
    if isinstance(focused, ProcessTable) and focused.row_count:
        key = focused.coordinate_to_cell_key(focused.cursor_coordinate).row_key.value or ""
        pid, gpu = (int(part) for part in key.split(":"))
        process = next((p for p in sample.processes if p.pid == pid and p.gpu_index == gpu), None)
        if process:
            return _sheet(f"Process {pid} on GPU {gpu}", process.model_dump(), unit)
    index = focused.index if isinstance(focused, GpuCard) else 0
    card = next((g for g in sample.gpus if g.index == index), None)
    if card is None:
        return Text("Nothing selected: focus a GPU (tab) or a process row, then press enter.")
    return _sheet(f"GPU {index}", card.model_dump(), unit)


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
