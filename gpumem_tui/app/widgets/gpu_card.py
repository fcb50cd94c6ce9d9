"""GpuCard: one GPU's header line, measured bar, planned bar on the same scale, and plan vs measured."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Static

from gpumem_tui.app.widgets.memory_bar import MemoryBar
from gpumem_tui.compare import CompareRow
from gpumem_tui.measured import MeasuredSlice
from gpumem_tui.models import GpuRecord
from gpumem_tui.planner.overlay import GpuOverlay
from gpumem_tui.text import literal
from gpumem_tui.units import fmt

BLOCKS = " ▁▂▃▄▅▆▇█"


class GpuCard(Widget, can_focus=True):
    """Measured memory split by process over the planned bands, and their differences."""

    DEFAULT_CSS = "GpuCard { height: auto; }"

    def __init__(self, index: int, **kwargs):
        super().__init__(id=f"gpu-{index}", classes="gpu-card", **kwargs)
        self.index = index

    def compose(self) -> ComposeResult:
        with Horizontal(classes="gpu-row"):
            with Vertical(classes="gpu-main"):
                yield Static(classes="gpu-title")
                yield MemoryBar(classes="measured")
                yield MemoryBar(classes="planned")
                yield Static(classes="gpu-history")
            yield Static(classes="gpu-compare")

    def show(
        self,
        gpu: GpuRecord,
        slices: list[MeasuredSlice],
        overlay: GpuOverlay | None,
        rows: list[CompareRow],
        history: list[float],
        unit: str,
    ) -> None:
        total = gpu.memory_total_bytes or (overlay.capacity_bytes if overlay else 1)
        self.query_one(".gpu-title", Static).update(_title(gpu, unit))
        measured = self.query_one(".measured", MemoryBar)
        measured.label, measured.scale_bytes = "measured", total
        measured.slices = tuple((s.name, s.kind, s.bytes) for s in slices)
        planned = self.query_one(".planned", MemoryBar)
        planned.display = overlay is not None
        if overlay:
            planned.label, planned.scale_bytes = overlay.label, total
            planned.slices = tuple((b.name, b.kind, b.bytes) for b in overlay.bands)
        width = max(1, self.size.width - 50)
        line = Text("history  ", style="dim").append(spark(history, total, width), style="dim")
        self.query_one(".gpu-history", Static).update(line)
        compare = self.query_one(".gpu-compare", Static)
        compare.display = bool(rows)
        compare.update(_compare_table(rows, unit, overlay))


def _title(gpu: GpuRecord, unit: str) -> Text:
    text = Text(f"GPU {gpu.index} ", style="bold")
    text.append(literal(gpu.name, "unknown").removeprefix("NVIDIA "))
    if gpu.lost:
        text.append("  LOST: ", style="bold red")
        text.append(literal(gpu.error, "no answer from the driver"))
        return text
    used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
    share = f" {used / total:.0%}" if used is not None and total else ""
    text.append(f"  {fmt(used, unit)} / {fmt(total, unit)}{share}", style="bold")
    extras = [
        f"util {gpu.utilization_gpu_percent}%" if gpu.utilization_gpu_percent is not None else None,
        f"{gpu.temperature_c}°C" if gpu.temperature_c is not None else None,
        f"{gpu.power_w:.0f}W" if gpu.power_w is not None else None,
    ]
    text.append("  " + " ".join(e for e in extras if e), style="dim")
    return text


def spark(values: list[float], ceiling: float, width: int) -> str:
    """The last `width` values as bar heights against `ceiling` (the card's total), not their own range."""
    if not values or ceiling <= 0:
        return ""
    return "".join(BLOCKS[min(len(BLOCKS) - 1, max(0, round(v / ceiling * (len(BLOCKS) - 1))))]
                   for v in values[-width:])


def _compare_table(rows: list[CompareRow], unit: str, overlay: GpuOverlay | None) -> Table:
    table = Table(
        box=None,
        pad_edge=False,
        show_edge=False,
        header_style="bold",
        title=Text(f"plan ({overlay.label}) vs measured" if overlay else ""),
        title_justify="left",
    )
    for name in ("", "plan", "now", "diff"):
        table.add_column(name, justify="left" if not name else "right", no_wrap=True)
    for row in rows:
        diff = row.difference_bytes
        style = (
            "bold yellow"
            if diff is not None and abs(diff) > 0.05 * max(1, row.planned_bytes or 1) and abs(diff) > 2**30
            else ""
        )
        table.add_row(
            Text(literal(row.name)),
            Text(fmt(row.planned_bytes, unit)),
            Text(fmt(row.measured_bytes, unit)),
            Text("" if diff is None else f"{'+' if diff >= 0 else ''}{fmt(diff, unit)}", style=style),
        )
    return table
