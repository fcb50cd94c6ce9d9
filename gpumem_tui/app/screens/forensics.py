"""ForensicsScreen: over a recording, a node's history in Prometheus or the minutes the app keeps in memory,
why each engine that exited did, each GPU's memory over time with markers where processes started or exited
and findings were first raised, and who grew before the first critical finding (unexpected growth first)."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gpumem_tui.app.node import Load
from gpumem_tui.app.tone import severity_style, tone
from gpumem_tui.app.widgets.gpu_card import spark
from gpumem_tui.diagnosis.forensics import Forensics, grew_over, no_samples, nobody_grew
from gpumem_tui.glyphs import Glyphs
from gpumem_tui.text import literal
from gpumem_tui.units import Unit, fmt

WIDTH = 72


class ForensicsScreen(ModalScreen[None]):
    """Runs `load` in a worker (a long recording takes a while; the screen stays responsive) and shows what
    it found. `what` names the source: a recording's path, a node's history, or the minutes kept in memory.
    Sizes are in the node's unit; `g` switches it here as on the monitor, and the sheet is drawn again."""

    BINDINGS = [Binding("escape,q,f", "dismiss", "close"), Binding("g", "units", "GB/GiB")]

    def __init__(self, what: str, load: Load, glyphs: Glyphs, unit: Unit, switch_unit: Callable[[], Unit]):
        """`load` gives what it found; None or, in words, why it found nothing (no samples). `switch_unit`:
        the node's `g`, which gives the unit it switched to."""
        super().__init__()
        self.what, self.load, self.glyphs = what, load, glyphs
        self.unit, self.switch_unit = unit, switch_unit
        self.found: Forensics | None = None
        """What `load` found, kept to draw again in the other unit."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="details-box"):
            yield Static(Text(f"Reading {literal(self.what)}…", style="dim"), id="forensics-text")

    def on_mount(self) -> None:
        self._investigate()

    @work(thread=True, exit_on_error=False)
    def _investigate(self) -> None:
        try:
            found = self.load()
        except Exception as exc:  # noqa: BLE001 - a bad recording is a message on this screen
            self.app.call_from_thread(self._show, Text(f"cannot read {literal(self.what)}: {literal(str(exc))}"))
            return
        if found is None or isinstance(found, str):
            self.app.call_from_thread(self._show, Text(f"{literal(self.what)}: {literal(found or no_samples([]))}"))
        else:
            self.app.call_from_thread(self._found, found)

    def _found(self, found: Forensics) -> None:
        self.found = found
        self._show(self._report(found))

    def _show(self, body) -> None:
        self.query_one("#forensics-text", Static).update(body)

    def action_units(self) -> None:
        self.unit = self.switch_unit()
        if self.found is not None:
            self._show(self._report(self.found))

    def _report(self, found: Forensics) -> Group:
        unit = self.unit
        parts: list = [Text(f"Forensics of {literal(self.what)}: {found.end_offset_s:,.0f} s", style="bold")]
        loud = tone(self.app, "error", True)
        parts += [Text(literal(note), style=tone(self.app, "warning", True)) for note in found.notes]
        for finding in found.exits:
            parts += [
                Text(literal(finding.title), style=loud),
                Text(literal(finding.explanation)),
                Text(f"try: {literal(finding.try_this)}", style="dim"),
            ]
        for timeline in found.timelines:
            parts += _timeline(timeline, found, self.glyphs, unit)
        markers = Table(title=Text("Markers (seconds from the start)"), title_justify="left", box=None)
        for name in ("at", "GPU", "what"):
            markers.add_column(name, justify="right" if name == "at" else "left")
        for m in found.markers:
            style = severity_style(self.app, m.severity) if m.severity else ""
            markers.add_row(
                f"{m.offset_s:,.0f} s",
                "" if m.gpu_index is None else str(m.gpu_index),
                Text(literal(m.text), style=style),
            )
        parts.append(markers)
        parts.append(_who_grew(found, loud, unit))
        return Group(*parts)


def _timeline(timeline, found: Forensics, glyphs: Glyphs, unit: Unit) -> list[Text]:
    """Memory used as a line of heights, and under it where each marker of this GPU fell."""
    total = timeline.total_bytes or max((b for _, b in timeline.points), default=1)
    end = max(1.0, found.end_offset_s)
    cells = [0.0] * WIDTH
    for offset, used in timeline.points:
        cell = min(WIDTH - 1, int(offset / end * WIDTH))
        cells[cell] = max(cells[cell], used / max(1, total))
    mark = {"process_started": glyphs.started, "process_exited": glyphs.exited, "finding": "!"}
    marks = [" "] * WIDTH
    for m in found.markers:
        if m.gpu_index == timeline.gpu_index:
            marks[min(WIDTH - 1, int(m.offset_s / end * WIDTH))] = mark[m.kind]
    levels = tuple(round(c * 8) for c in cells)
    return [
        Text(f"GPU {timeline.gpu_index} {spark(levels, WIDTH, glyphs)} of {fmt(total, unit)}"),
        Text(f"      {''.join(marks)}  {glyphs.started} started {glyphs.exited} exited ! finding", style="dim"),
    ]


def _who_grew(found: Forensics, loud, unit: Unit) -> Text | Table:
    if found.first_critical is None and found.critical_forgotten:
        return Text(
            f"The first critical finding (and who grew before it) fell out of the {found.end_offset_s:,.0f} s "
            "kept in memory; an exit above is explained in its own finding.",
            style=loud,
        )
    if found.first_critical is None:
        return Text(f"Nothing critical was found in these {found.end_offset_s:,.0f} s.")
    first = f"First critical at {found.first_critical_offset_s:,.0f} s: {literal(found.first_critical.title)}."
    if not found.who_grew:
        return Text(f"{first} {nobody_grew(found)}", style=loud)
    table = Table(
        title=Text(f"{first} Who grew in {grew_over(found)}:", style=loud),
        title_justify="left",
        box=None,
    )
    for name in ("GPU", "pid", "name", "from", "to", "growth", "why"):
        table.add_column(name)
    for g in found.who_grew:
        table.add_row(
            str(g.gpu_index),
            str(g.pid),
            Text(literal(g.name, "?")),
            fmt(g.start_bytes, unit),
            fmt(g.end_bytes, unit),
            f"+{fmt(g.growth_bytes, unit)}",
            Text(g.why, style=loud if g.unexpected_bytes else "dim"),
        )
    return table
