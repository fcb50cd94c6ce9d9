"""GpuCard: one GPU's header line, measured bar, planned bar on the same scale, history, and plan vs
measured, drawn as one widget (fewer widgets make a cheaper refresh); or, compact, all of it in one line:
bar, used / total and the plan's verdict."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from gpumem_tui.app.redraw import without_links
from gpumem_tui.app.tone import severity_style, tone
from gpumem_tui.app.view import GpuView
from gpumem_tui.app.widgets.memory_bar import COMPONENT_CLASSES, bar
from gpumem_tui.diagnosis.compare import CompareRow
from gpumem_tui.glyphs import UNICODE, Glyphs
from gpumem_tui.models import GpuRecord
from gpumem_tui.text import literal, short_bus_id
from gpumem_tui.units import Unit, fmt

SCALE = 1000  # bars are drawn from sizes in thousandths of the card
HISTORY_BUCKET = 5  # samples per history cell
COMPARE_WIDTH = 44
NAMED_ROW_WIDTH = 100
"""A one-line card this wide names its bus id beside the index; a narrower one keeps the width for the bar."""
VERDICT_WIDTH = 11
"""`as planned`, `2 critical`, `3 warnings` and `no plan` all fit: the one-line bars end in one column."""
TAIL = ("driver", "reserve", "spare")
"""Planned kinds drawn after what the engine holds, in this order: the measured bar ends the same way."""


Slice = tuple[str, str, int]
"""(name, kind, thousandths of the card) of one part of a bar."""


@dataclass(frozen=True)
class GpuCardContent:
    """What the card draws, at the bars' resolution: an equal content is not drawn again. A one-line card's
    leaves out what its line does not show (title, plan, table, history): they are built when it opens."""

    title: Text | None
    label: str
    """`GPU 0 18:00.0`: NVML's index and the card's bus id, when the driver gave one."""
    total_bytes: int
    measured: tuple[Slice, ...]
    planned: tuple[str, tuple[Slice, ...]] | None
    """The plan's label and its bands, on the measured bar's scale; None without a plan."""
    cells: tuple
    """The plan-vs-measured rows as drawn (`_compare_cells`)."""
    history: tuple[int, ...]
    tail: Text
    """The one-line row's end: used / total and the verdict."""


class GpuCard(Widget, can_focus=True):
    """Measured memory split by process over the planned bands, and their differences."""

    DEFAULT_CSS = "GpuCard { height: auto; }"
    COMPONENT_CLASSES = COMPONENT_CLASSES
    BINDINGS = [
        # enter says what it does here: a one-line card opens in full, a full card shows its details
        Binding("enter", "open", "full card"),
        Binding("enter", "details", "details"),
        Binding("escape", "fold", "one line", show=False),
        Binding("up", "step(-1)", "previous GPU", show=False),
        Binding("down", "step(1)", "next GPU", show=False),
    ]
    content: reactive[GpuCardContent | None] = reactive(None, repaint=False)
    """Drawn by `watch_content`, only where what is shown changed."""
    compact: reactive[bool] = reactive(False, layout=True)
    """One line (the screen holds several GPUs in little room); `enter` asks the screen for the full card."""

    class Details(Message):
        """Enter on a full card: the screen shows every field NVML gave of it."""

    class Toggled(Message):
        """The card asks its screen to show it full (`open`) or as one line again."""

        def __init__(self, index: int, open: bool) -> None:
            super().__init__()
            self.index, self.open = index, open

    def __init__(self, index: int, glyphs: Glyphs, **kwargs):
        super().__init__(id=f"gpu-{index}", classes="gpu-card", **kwargs)
        self.index, self.glyphs = index, glyphs
        self._shown: tuple[GpuView, Unit] | None = None
        """The last view and unit shown: a card that opens builds what its line left out from them."""
        without_links(self)

    def watch_compact(self, compact: bool) -> None:
        self.set_class(compact, "-compact")
        self.refresh_bindings()
        if self._shown is not None:  # what the card draws now: its line alone, or all of it
            self.content = self._content(*self._shown)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:  # noqa: ARG002
        """`enter` opens a one-line card, or shows a full card's details; the arrows move from GPU to GPU while
        the GPUs are one line each (full cards leave them to scroll the screen)."""
        if action == "open":
            return self.compact
        if action == "details":
            return not self.compact
        if action == "step":
            return self.compact or self.has_class("-open")
        return True

    def action_open(self) -> None:
        """Enter on a one-line card: the screen shows it in full."""
        self.post_message(self.Toggled(self.index, True))

    def action_details(self) -> None:
        """Enter on a full card: the screen shows every field NVML gave."""
        self.post_message(self.Details())

    def action_step(self, by: int) -> None:
        """Up or down among one-line GPUs: the focus goes to the card above or below, none past the ends."""
        cards = list(self.screen.query(GpuCard))
        at = cards.index(self) + by
        if 0 <= at < len(cards):
            cards[at].focus()

    def action_fold(self) -> None:
        """Escape: a card opened from one line goes back to one line."""
        if self.has_class("-open"):
            self.post_message(self.Toggled(self.index, False))

    def show(self, view: GpuView, unit: Unit) -> None:
        """Only what is drawn goes into `content`, so an unchanged card is not redrawn."""
        self._shown = (view, unit)
        self.content = self._content(view, unit)

    def _content(self, view: GpuView, unit: Unit) -> GpuCardContent:
        gpu, overlay = view.gpu, view.overlay
        known = gpu.memory_total_bytes or (overlay.capacity_bytes if overlay else None)
        total = known or 1
        # no size to draw against (NVML refused the card's memory: a MIG card without the monitor privilege):
        # no bar, rather than its processes' bytes over one byte
        line = GpuCardContent(
            title=None,
            label=" ".join(part for part in (f"GPU {gpu.index}", short_bus_id(gpu.bus_id)) if part),
            total_bytes=total,
            measured=tuple((s.name, s.kind, _per_mille(s.bytes, total)) for s in view.slices) if known else (),
            planned=None,
            cells=(),
            history=(),
            tail=_row_tail(gpu, unit, view.verdict, self.app),
        )
        if self.compact:
            return line
        return replace(
            line,
            title=_title(gpu, unit, self.app, self.glyphs),
            planned=(
                overlay.label,
                tuple((b.name, b.kind, _per_mille(b.bytes, total)) for b in drawn_order(overlay.bands)),
            )
            if overlay
            else None,
            cells=_compare_cells(view.rows, unit),
            history=history_levels(view.history, total) if known else (),
        )

    def watch_content(self, old: GpuCardContent | None, new: GpuCardContent | None) -> None:
        """Lay out again only when the card's height can change (a plan or a table appears or goes); draw
        again only when what it shows changed."""
        if _shape(old) != _shape(new):
            self.refresh(layout=True)
        elif old != new:
            self.refresh()

    def get_content_height(self, container, viewport, width: int) -> int:  # noqa: ARG002 (Textual's signature)
        """Lines for this width, the same count `render` draws: the table beside the bars when wide."""
        if self.content is None or self.compact:
            return 1
        return full_height(bool(self.content.planned), len(self.content.cells), width)

    def render(self) -> Text:
        """One Text, columns padded by hand: a rich Table per card per second costs more than the data."""
        if self.content is None:
            return Text("")
        content = self.content
        title, measured, planned, cells, history, tail = (
            content.title,
            content.measured,
            content.planned,
            content.cells,
            content.history,
            content.tail,
        )
        styles: dict[str, object] = {}

        def style(name: str):
            if name not in styles:
                styles[name] = self.get_component_rich_style(name)
            return styles[name]

        glyphs = self.glyphs
        if self.compact or title is None:  # built as one line
            label = content.label if self.size.width >= NAMED_ROW_WIDTH else f"GPU {self.index}"
            line = bar(label, measured, SCALE, self.size.width - tail.cell_len, style, glyphs, len(label) + 1)
            return line.append_text(tail)
        wide = _wide(cells, self.size.width)
        width = self.size.width - (COMPARE_WIDTH + 2 if wide else 0)
        left = [bar("measured", measured, SCALE, width, style, glyphs)]
        if planned:
            left.append(bar(planned[0], planned[1], SCALE, width, style, glyphs))
        left.append(Text("history  ", style="dim").append(spark(history, max(1, width - 9), glyphs), style="dim"))
        right = _compare_lines(cells, planned[0] if planned else "", tone(self.app, "warning", True)) if cells else []
        if wide:
            rows = max(len(left), len(right))
            left += [Text("")] * (rows - len(left))
            right += [Text("")] * (rows - len(right))
            lines = [line.copy() for line in left]
            for line, extra in zip(lines, right, strict=True):
                line.truncate(width, pad=True)
                line.append("  ").append_text(extra)
        else:
            lines = left + right
        return Text("\n").join([title, *lines])


def full_height(planned: bool, compared: int, width: int) -> int:
    """Lines of the full card at this width, the same count `render` draws: the title over the bars and
    history, with the plan-vs-measured table (two header lines and `compared` rows) beside them when wide."""
    left = 2 + (1 if planned else 0)
    right = compared + 2 if compared else 0
    return 1 + (max(left, right) if _wide(compared, width) else left + right)


def _wide(cells, width: int) -> bool:
    """The comparison sits beside the bars when the card is wide enough to leave them 50 cells."""
    return bool(cells) and width >= 100


def drawn_order(bands: list) -> list:
    """Planned bands as the bar draws them: what the engine holds from the left edge, as on the measured bar,
    then the driver's share, what utilization leaves and the spare."""
    return sorted(bands, key=lambda band: TAIL.index(band.kind) if band.kind in TAIL else -1)


def _shape(content: GpuCardContent | None) -> tuple:
    if content is None:
        return (False, False, 0)
    return (True, content.planned is not None, len(content.cells))


def _per_mille(size: int, total: int) -> int:
    """Sizes kept at the bar's finest resolution, so a few MiB of jitter does not redraw the card."""
    return round(size * SCALE / max(1, total))


def history_levels(history: list[float], ceiling: float, bucket: int = HISTORY_BUCKET) -> tuple[int, ...]:
    """Heights 0-8 of the highest reading in each run of `bucket` samples (the newest run may be short):
    the line moves every few samples instead of every one, and a peak is never averaged away."""
    recent = history[-200 * bucket :]
    start = len(recent) % bucket
    runs = ([recent[:start]] if start else []) + [recent[i : i + bucket] for i in range(start, len(recent), bucket)]
    return tuple(_level(max(run), ceiling) for run in runs if run)


def _level(value: float, ceiling: float) -> int:
    """0-8; anything above zero shows at least the lowest bar."""
    level = round(value / max(1e-9, ceiling) * 8)
    return max(level, 1) if value > 0 else 0


def spark(levels: tuple[int, ...], width: int, glyphs: Glyphs = UNICODE) -> str:
    """History as bar heights (0-8, of the card's total): the newest `width` readings."""
    return "".join(glyphs.levels[max(0, min(8, level))] for level in levels[-width:])


def _title(gpu: GpuRecord, unit: Unit, app, glyphs: Glyphs) -> Text:
    text = Text(f"GPU {gpu.index} ", style="bold")
    if not gpu.accessible:  # NVML gives no name for a GPU it will not open
        text.append(" not accessible from here", style="bold")
        text.append(" (a cgroup or container lets this process open only some GPUs)", style="dim")
        return text
    bus_id = short_bus_id(gpu.bus_id)
    if bus_id:  # NVML's index is not CUDA's: the bus id says which card whatever the order
        text.append(f"{bus_id} ", style="dim")
    text.append(literal(gpu.name, "unknown").removeprefix("NVIDIA "))
    if gpu.lost:
        text.append("  LOST: ", style=tone(app, "error", True))
        text.append(literal(gpu.error, "no answer from the driver"))
        return text
    used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
    share = f" {used / total:.0%}" if used is not None and total else ""
    text.append(f"  {fmt(used, unit)} / {fmt(total, unit)}{share}", style="bold")
    extras = [
        f"util {gpu.utilization_gpu_percent}%" if gpu.utilization_gpu_percent is not None else None,
        "util n/a (MIG)" if gpu.utilization_gpu_percent is None and gpu.mig_enabled else None,
        f"{gpu.temperature_c}{glyphs.degree}C" if gpu.temperature_c is not None else None,
        f"{gpu.power_w:.0f}W" if gpu.power_w is not None else None,
    ]
    text.append("  " + " ".join(e for e in extras if e), style="dim")
    return text


def _row_tail(gpu: GpuRecord, unit: Unit, verdict: tuple[str, str], app) -> Text:
    """What follows the compact line's bar: used / total with its share, then the verdict."""
    if gpu.lost:
        return Text(f"  {'LOST':<{VERDICT_WIDTH}}", style=tone(app, "error", True))
    if not gpu.accessible:
        return Text(f"  {'no access':<{VERDICT_WIDTH}}", style="dim")
    used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
    share = f" {used / total:.0%}" if used is not None and total else ""
    text = Text(f" {fmt(used, unit)} / {fmt(total, unit)}{share:>5}")
    shown, severity = verdict
    text.append(f"  {shown:<{VERDICT_WIDTH}}", style=severity_style(app, severity) if severity != "info" else "dim")
    return text


def _compare_cells(rows: list[CompareRow], unit: Unit) -> tuple[tuple[str, str, str, str, bool], ...]:
    """The strings the table shows, and whether to stress the difference (over 1 GiB and 5 %); a row still
    loading shows `loading` for its difference, unstressed."""
    cells = []
    for row in rows:
        diff = row.difference_bytes
        loud = diff is not None and abs(diff) > 2**30 and abs(diff) > 0.05 * max(1, row.planned_bytes or 1)
        shown = "" if diff is None else f"{'+' if diff >= 0 else ''}{fmt(diff, unit)}"
        if row.loading:
            loud, shown = False, "loading"
        cells.append((row.name, fmt(row.planned_bytes, unit), fmt(row.measured_bytes, unit), shown, loud))
    return tuple(cells)


def _compare_lines(cells, label: str, loud_style) -> list[Text]:
    """Plan vs measured as fixed-width lines: band, plan, now, diff."""
    lines = [
        Text(f"plan ({label}) vs measured", style="bold"),
        Text(f"{'':<16}{'plan':>9}{'now':>9}{'diff':>10}", style="bold"),
    ]
    for name, planned, measured, diff, loud in cells:
        line = Text(f"{literal(name)[:16]:<16}{planned:>9}{measured:>9}")
        line.append(f"{diff:>10}", style=loud_style if loud else "")
        lines.append(line)
    return lines
