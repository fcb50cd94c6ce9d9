"""ForensicsScreen: on a recording, each GPU's memory over time with markers where processes started or
exited and findings were first raised, and who grew before the first critical finding."""

from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gpumem_tui.app.tone import severity_style, tone
from gpumem_tui.app.widgets.gpu_card import spark
from gpumem_tui.forensics import Forensics, investigate
from gpumem_tui.sources.replay import RecordingReader
from gpumem_tui.text import literal
from gpumem_tui.units import fmt

WIDTH = 72
MARK = {"process_started": "▲", "process_exited": "▼", "finding": "!"}


class ForensicsScreen(ModalScreen[None]):
    """Reads the whole recording in a worker (the screen stays responsive) and shows what it found."""

    BINDINGS = [Binding("escape,q,f", "dismiss", "close")]

    def __init__(self, path: Path, judge):
        super().__init__()
        self.path, self.judge = path, judge

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="details-box"):
            yield Static(Text(f"Reading {literal(str(self.path))}…", style="dim"), id="forensics-text")

    def on_mount(self) -> None:
        self._investigate()

    @work(thread=True, exit_on_error=False)
    def _investigate(self) -> None:
        try:
            found = investigate(RecordingReader(self.path), self.judge.catalog, self.judge.plan, self.judge.thresholds)
        except Exception as exc:  # noqa: BLE001 - a bad recording is a message on this screen
            self.app.call_from_thread(self._show, Text(f"cannot read the recording: {literal(str(exc))}"))
            return
        body = Text("The recording holds no samples.") if found is None else self._report(found)
        self.app.call_from_thread(self._show, body)

    def _show(self, body) -> None:
        self.query_one("#forensics-text", Static).update(body)

    def _report(self, found: Forensics) -> Group:
        parts: list = [Text(f"Forensics of {literal(str(self.path))}: {found.end_offset_s:,.0f} s", style="bold")]
        for timeline in found.timelines:
            parts += _timeline(timeline, found)
        markers = Table(title=Text("Markers (seconds into the recording)"), title_justify="left", box=None)
        for name in ("at", "GPU", "what"):
            markers.add_column(name, justify="right" if name == "at" else "left")
        for m in found.markers:
            style = severity_style(self.app, m.severity) if m.severity else ""
            markers.add_row(f"{m.offset_s:,.0f} s", "" if m.gpu_index is None else str(m.gpu_index),
                            Text(literal(m.text), style=style))
        parts.append(markers)
        parts.append(_who_grew(found, tone(self.app, "error", True)))
        return Group(*parts)


def _timeline(timeline, found: Forensics) -> list[Text]:
    """Memory used as a line of heights, and under it where each marker of this GPU fell."""
    total = timeline.total_bytes or max((b for _, b in timeline.points), default=1)
    end = max(1.0, found.end_offset_s)
    cells = [0.0] * WIDTH
    for offset, used in timeline.points:
        cell = min(WIDTH - 1, int(offset / end * WIDTH))
        cells[cell] = max(cells[cell], used / max(1, total))
    marks = [" "] * WIDTH
    for m in found.markers:
        if m.gpu_index == timeline.gpu_index:
            marks[min(WIDTH - 1, int(m.offset_s / end * WIDTH))] = MARK[m.kind]
    levels = tuple(round(c * 8) for c in cells)
    return [Text(f"GPU {timeline.gpu_index} {spark(levels, WIDTH)} of {fmt(total, 'GiB')}"),
            Text(f"      {''.join(marks)}  ▲ started ▼ exited ! finding", style="dim")]


def _who_grew(found: Forensics, loud) -> Text | Table:
    if found.first_critical is None:
        return Text("Nothing critical was found in this recording.")
    table = Table(title=Text(f"First critical at {found.first_critical_offset_s:,.0f} s: "
                             f"{literal(found.first_critical.title)}. Who grew in the {found.window_s:,.0f} s "
                             "before it:", style=loud), title_justify="left", box=None)
    for name in ("GPU", "pid", "name", "from", "to", "growth"):
        table.add_column(name)
    for g in found.who_grew:
        table.add_row(str(g.gpu_index), str(g.pid), Text(literal(g.name, "?")), fmt(g.start_bytes, "GiB"),
                      fmt(g.end_bytes, "GiB"), f"+{fmt(g.growth_bytes, 'GiB')}")
    return table
