"""FleetScreen: the fleet from one source (a Prometheus, or the simulated fleet of `--demo`). A worker reads
one FleetSample each interval in a thread of its own (never on the UI's loop), judges it with the fleet's
judge (diagnosis/fleet/judge.py), and the screen draws the header, the verdict in `fleet check`'s words, then
the nodes (most severe first) and the findings by code, the history, the models and the notes of what is
unknown (fleet_view.py). A failed read, or one still out when the next is due, keeps the last sample and says
`stale`, then `down` after DOWN_AFTER intervals. `enter` on a node pushes its node screen over this one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Static

from gpumem_tui.app.fleet_history_view import history_lines
from gpumem_tui.app.fleet_view import Table, finding_table, model_table, node_table
from gpumem_tui.app.node import Node
from gpumem_tui.app.off_thread import off_thread
from gpumem_tui.app.screens.help import FLEET_HELP, HelpScreen
from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.app.tone import severity_style, state_style
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.fleet.held_back import data_age
from gpumem_tui.diagnosis.fleet.judge import judge_fleet, nothing_read, verdict
from gpumem_tui.diagnosis.fleet.records import FleetFinding
from gpumem_tui.diagnosis.fleet.scale import rules_advice
from gpumem_tui.glyphs import Glyphs
from gpumem_tui.sources.prometheus.client import PrometheusError
from gpumem_tui.sources.prometheus.history import FleetHistory
from gpumem_tui.sources.prometheus.records import FleetSample
from gpumem_tui.text import literal
from gpumem_tui.units import Unit

FIRST_ROWS = 100
"""Rows a table is drawn with at once: a screenful and more (the node table shows 14)."""
MORE_ROWS = 500
"""Rows added after each frame until the table has them all: 1,000 nodes' rows at once held up the first
frame by about 0.3 s, and each refresh's redraw kept the keys waiting as long."""
DOWN_AFTER = 4
"""Intervals without an answer after which the source is said down rather than stale."""
Reader = Callable[[], Coroutine[Any, Any, FleetSample]]
HistoryReader = Callable[[float], Coroutine[Any, Any, FleetHistory]]
"""Reads the fleet's history up to the moment given (the sample's evaluation time)."""
HISTORY_EVERY_S = 60.0
"""The history is read again at most this often: its range queries cost more than a refresh, and a
sparkline point every 30 s does not need them more often."""


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def _why(error: BaseException) -> str:
    if isinstance(error, PrometheusError):
        return error.said()
    return f"{type(error).__name__}: {error}"


@dataclass
class Filling:
    """A table's rows being added (FleetScreen._fill): all of them, and where its cursor was."""

    rows: list[tuple[tuple[str, ...], str | None, str | None]]
    """Each row's cells, severity and key."""
    key: str | None
    """The row the cursor was on (by key): it goes back there once that row is in."""
    row: int
    """That row's index, where the row is gone."""
    placed: bool = False


@dataclass(frozen=True)
class Fleet:
    """What the fleet's screen reads, and how often."""

    read: Reader
    source: str
    """What the header names as the source: Prometheus's URL, or the demo's words."""
    interval_s: float = 15.0
    poll: bool = True
    clock: Callable[[], float] = time.time
    thresholds: Thresholds | None = None
    read_history: HistoryReader | None = None
    open_node: Callable[[str], Node] | None = None
    """A node's Node by its name, for `enter` on its row to open its screen; None: rows open nothing."""


class FleetScreen(Screen):
    """The fleet's screen; its reads pause while a node's screen is over it and start again on the way back."""

    BINDINGS = [
        ("enter", "open_node", "Open node"),
        ("r", "refresh_now", "Refresh now"),
        ("g", "units", "GB/GiB"),
        Binding("question_mark,h", "help", "Help"),
        ("q", "app.quit", "Quit"),
    ]

    def __init__(self, fleet: Fleet, glyphs: Glyphs) -> None:
        super().__init__()
        self.fleet, self.glyphs = fleet, glyphs
        self.thresholds = fleet.thresholds or Thresholds()
        self.history: FleetHistory | None = None
        self.history_failure: str | None = None
        self.history_read_at: float | None = None
        self.sample: FleetSample | None = None
        self.findings: list[FleetFinding] = []
        self.last_ok: float | None = None
        self.failure: str | None = None
        self.failed_at: float | None = None
        self.reading_since: float | None = None
        """When the read now out started (None: none is out)."""
        self.overdue = False
        """The read out was still out when the next one was due: what is on screen is no longer current."""
        self.filling: dict[str, Filling] = {}
        """Tables whose rows are still being added, by name."""
        self.looked = False
        """The tables on screen are a first look's (FleetSample.reading)."""
        self._ticker: Timer | None = None
        self._away = False
        """A node's screen is over this one."""
        self.unit: Unit = "GB"
        """The sizes' unit, as the node screen's: `g` switches it here, and a node opened from here keeps it
        both ways (one setting for the fleet and its nodes)."""
        self.opened: Node | None = None
        """The node whose screen is over this one: its unit comes back with it."""

    def compose(self) -> ComposeResult:
        """The header and the verdict, then what needs a look first: the nodes (most severe first) and the
        findings, before the history, the models and the notes of what is unknown."""
        yield Static(id="fleet-header")
        yield Static(id="fleet-verdict")
        with VerticalScroll(id="fleet-body"):
            for name, title in (("nodes", "Nodes (most severe first)"), ("findings", "Fleet findings by code")):
                yield Static(title, classes="fleet-title")
                yield DataTable(id=f"fleet-{name}", cursor_type="row", zebra_stripes=False)
            yield Static(id="fleet-history")
            yield Static("Models", classes="fleet-title")
            yield DataTable(id="fleet-models", cursor_type="row", zebra_stripes=False)
            yield Static(id="fleet-notes", classes="fleet-notes")
        yield Footer()

    def on_mount(self) -> None:
        self._draw()
        if self.fleet.open_node is not None:  # the node table has the keys: focused after Textual's first focus
            self.call_after_refresh(self.query_one("#fleet-nodes", DataTable).focus)
        self.refresh_now()
        if self.fleet.poll:
            self._ticker = self.set_interval(self.fleet.interval_s, self.refresh_now)

    def on_screen_suspend(self) -> None:
        """A node's screen is over this one: no reads of the fleet meanwhile."""
        self._away = True
        if self._ticker is not None:
            self._ticker.pause()

    def on_screen_resume(self) -> None:
        """Back from a node's screen: read now, then on the interval again."""
        if not self._away:
            return
        self._away = False
        if self.opened is not None:  # `g` there is `g` here
            self.unit, self.opened = self.opened.unit, None
            self._draw()
        self.refresh_now()
        if self._ticker is not None:
            self._ticker.resume()

    def action_units(self) -> None:
        """`g`: GB or GiB, as on the node screen."""
        self.unit = "GiB" if self.unit == "GB" else "GB"
        self._draw()

    def action_refresh_now(self) -> None:
        self.refresh_now()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.glyphs, FLEET_HELP))

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        """`enter` is offered (and shown in the footer) only where a node can be opened."""
        return self.fleet.open_node is not None if action == "open_node" else True

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "fleet-nodes":
            self.action_open_node()

    def action_open_node(self) -> None:
        """The node under the nodes table's cursor: its screen over this one, q or escape there back here."""
        nodes, open_node = self.query_one("#fleet-nodes", DataTable), self.fleet.open_node
        if open_node is None or not nodes.row_count:
            return
        key = nodes.coordinate_to_cell_key(nodes.cursor_coordinate).row_key.value
        if key is not None:
            node = open_node(key)
            node.unit, self.opened = self.unit, node
            self.app.push_screen(MainScreen(node, self.glyphs, back_to="the fleet"))

    def refresh_now(self) -> None:
        """Start a read unless one is running (a slow source is never asked twice at once)."""
        if any(w.node is self and w.group == "fleet" and w.is_running for w in self.workers):
            self.overdue = True  # the next read is due and this one is still out: the screen says so now
            self.query_one("#fleet-header", Static).update(self.header())
            return
        self._refresh()

    @work(group="fleet", exit_on_error=False)
    async def _refresh(self) -> None:
        sample = await self._read_once()
        while sample is not None and sample.reading:  # a first look: the rest now, once it is on screen
            await self._painted()
            sample = await self._read_once()
        if sample is not None and self._history_due():  # the fleet first: the history's range queries cost more
            await self._painted()  # their CPU (and the server's) would hold up the frame that shows the fleet
            await off_thread(lambda: self._read_history(sample.evaluated_at), "fleet history")
            self._draw_history()  # the tables are as they were: 1,000 rows filled again held the screen

    async def _read_once(self) -> FleetSample | None:
        """One read, judged and drawn; None where it failed (the header says why)."""
        self.reading_since, self.overdue = self.fleet.clock(), False
        try:
            sample, findings = await off_thread(self._read_and_judge, "fleet read")
        except Exception as exc:  # noqa: BLE001 - a source that fails degrades the header, never the app
            self.failure, self.failed_at = literal(_why(exc)), self.fleet.clock()
            self.reading_since, self.overdue = None, False
            self._draw()
            return None
        self.reading_since, self.overdue = None, False
        self.sample, self.findings = sample, findings
        self.last_ok, self.failure, self.failed_at = self.fleet.clock(), None, None
        self._draw()
        return sample

    async def _painted(self) -> None:
        """Once the screen has been refreshed with what was drawn before."""
        painted = asyncio.Event()
        self.call_after_refresh(painted.set)
        await painted.wait()

    def _read_and_judge(self) -> tuple[FleetSample, list[FleetFinding]]:
        """In a thread of its own, with its own event loop: the join and the judge of thousands of nodes
        take CPU that would otherwise stall the screen."""
        sample = asyncio.run(self.fleet.read())
        return sample, judge_fleet(sample, self.thresholds)

    def _history_due(self) -> bool:
        if self.fleet.read_history is None:
            return False
        now = self.fleet.clock()
        if self.history_read_at is not None and now - self.history_read_at < HISTORY_EVERY_S:
            return False
        self.history_read_at = now
        return True

    def _read_history(self, at: float) -> None:
        """In a thread of its own, once a minute at most; a failure says why on the history line and keeps
        the last one read, never the sample's failure."""
        if self.fleet.read_history is None:
            return
        try:
            self.history, self.history_failure = asyncio.run(self.fleet.read_history(at)), None
        except Exception as exc:  # noqa: BLE001 - the history line degrades alone
            self.history_failure = literal(_why(exc))

    def state(self) -> tuple[str, str]:
        """(ok|stale|down, the words the header says about it)."""
        if self.overdue and self.reading_since is not None:
            return self._overdue(self.reading_since)
        if self.failure is None:
            if self.sample is None:
                return "stale", f"reading {literal(self.fleet.source)} ..."
            if self.sample.state != "ok":
                return "stale", f"stale: part of the answer is missing: {literal(self.sample.error or '')}"
            if empty := nothing_read(self.sample):  # as fleet check's UNKNOWN: never ok over nothing
                return "stale", f"holds {literal(empty)}"
            return "ok", "ok"
        if self.last_ok is None:
            return "down", f"down: {self.failure}"
        silent = (self.failed_at or self.fleet.clock()) - self.last_ok
        if silent >= DOWN_AFTER * self.fleet.interval_s:
            return "down", f"down: no answer for {silent:.0f} s ({self.failure}); showing the sample read then"
        return "stale", f"stale: the last read failed {silent:.0f} s after the last good one ({self.failure})"

    def _overdue(self, since: float) -> tuple[str, str]:
        """The state while a read is out past the next one's time: stale over the last sample, down after
        DOWN_AFTER intervals without one."""
        now = self.fleet.clock()
        out = f"a read has been out for {now - since:.0f} s"
        if self.last_ok is None:
            return "stale", f"reading {literal(self.fleet.source)}: {out}"
        silent = now - self.last_ok
        if silent >= DOWN_AFTER * self.fleet.interval_s:
            return "down", f"down: no answer for {silent:.0f} s ({out}); showing the sample read then"
        return "stale", f"stale: {out}; showing the sample read {silent:.0f} s ago"

    def header(self) -> Text:
        state, words = self.state()
        text = Text(f"Source: {literal(self.fleet.source)}")
        sample = self.sample
        if sample is not None:
            c = sample.coverage
            age = data_age(sample.data_age_s, sample.held_back_s)
            text.append(f"  evaluated at {_when(sample.evaluated_at)}\n")
            line = f"{c.nodes:,} nodes, {c.gpus:,} GPUs"
            if sample.reading:  # a first look: the engines and the join are read next
                line += f"; reading {', '.join(sample.reading)} ..."
            else:
                line += f", {c.engines:,} engines, {c.joined:,} joined"
                line += f" ({c.not_joined:,} not joined)" if c.not_joined else ""
            text.append(f"{line}; data age {age}; ")
            if sample.join_age_s:  # the overview keeps the join between refreshes: never passed off as new
                text.append(f"the pod-to-GPU join as read {sample.join_age_s:.0f} s ago; ")
            if advice := rules_advice(sample):
                text.append(f"{advice}; ")
        else:
            text.append("\n")
        text.append("source ")  # the source's state, not the fleet's: the verdict says that
        text.append(words, style=state_style(self.app, state))
        return text

    def verdict(self) -> Text:
        """`fleet check`'s first words (judge.verdict) for the sample on screen, in its severity's colour;
        nothing before the first sample is read."""
        if self.sample is None:
            return Text("waiting for the first read of the fleet")
        code, words = verdict(self.sample, self.findings)
        severity = {1: "warning", 2: "critical"}.get(code)
        return Text(words, style=severity_style(self.app, severity) if severity else "")

    def notes(self, tables: list[Table]) -> Text:
        """What is unknown and why: the sample's, then each table's."""
        unknown = {} if self.sample is None else self.sample.unknown
        lines = [f"{what}: unknown, because {literal(why)}" for what, why in unknown.items()]
        return Text("\n".join([*lines, *(line for table in tables for line in table.said())]))

    def history_text(self) -> Text:
        lines = [] if self.history is None else history_lines(self.history, self.glyphs)
        if self.history is None and self.history_failure is None:
            lines.append("History: reading (range queries over the span; the fleet's tables come first)…")
        if self.history_failure is not None:
            lines.append(f"History: unknown, because {self.history_failure}")
        return Text("\n".join(lines))

    def _draw(self) -> None:
        self.query_one("#fleet-header", Static).update(self.header())
        self.query_one("#fleet-verdict", Static).update(self.verdict())
        self._draw_history()
        if self.sample is None:
            return
        tables = {
            "nodes": node_table(self.sample, self.findings, self.unit),
            "findings": finding_table(self.findings),
            "models": model_table(self.sample, self.findings, self.unit),
        }
        for name, table in tables.items():
            self._fill(name, table)
        self.looked = bool(self.sample.reading)
        self.query_one("#fleet-notes", Static).update(self.notes(list(tables.values())))

    def _draw_history(self) -> None:
        history = self.query_one("#fleet-history", Static)
        history.display = self.fleet.read_history is not None
        history.update(self.history_text())

    def _fill(self, name: str, table: Table) -> None:
        """The table drawn again: its first FIRST_ROWS rows now (more where the cursor's row comes later), the
        rest after the frame (`_more_rows`), the cursor kept on its row (by key). Columns are as wide as their
        widest cell, so the rows added later do not move them."""
        widget = self.query_one(f"#fleet-{name}", DataTable)
        row_now = widget.cursor_row
        key_now = widget.coordinate_to_cell_key(widget.cursor_coordinate).row_key.value if widget.row_count else None
        if (before := self.filling.get(name)) is not None and not before.placed:  # its cursor still to go back
            key_now, row_now = before.key, before.row
        if self.looked and row_now == 0:  # a first look's order is no one's choice: the top row stays the top
            key_now = None
        widget.clear(columns=True)
        for index, label in enumerate(table.columns):
            widest = max((cell_len(row[index]) for row in table.rows), default=0)
            widget.add_column(label, width=max(cell_len(label), widest))
        keys: list[str | None] = [*table.keys] or [None] * len(table.rows)
        named: set[str | None] = {None}  # a name that repeats: its row shown without a key (DataTable's
        for index, key in enumerate(keys):  # DuplicateKey, raised after the first frame, would end the app)
            if key in named:
                keys[index] = None
            named.add(key)
        rows = list(zip(table.rows, table.severities, keys, strict=True))
        at = next((i for i, (_, _, key) in enumerate(rows) if key is not None and key == key_now), -1)
        # the cursor's row comes with the first rows: between frames it would sit on the first row, for enter
        # or the next redraw to take as the node the cursor is on
        first = max(FIRST_ROWS, at + 1)
        if self.sample is not None and self.sample.reading:  # a first look: the rest of the rows come with the
            rows = rows[:first]  # whole picture, read now (adding them would take the CPU its read needs)
        self.filling[name] = Filling(rows, key_now, row_now)
        self._more_rows(name, self.filling[name], first)

    def _more_rows(self, name: str, filling: Filling, count: int) -> None:
        """`count` more of the rows `filling` holds, and the rest after the next frame (nothing where a newer
        fill of the table took its place)."""
        if self.filling.get(name) is not filling:
            return
        widget = self.query_one(f"#fleet-{name}", DataTable)
        start = widget.row_count
        for row, severity, key in filling.rows[start : start + count]:
            style = severity_style(self.app, severity) if severity else ""
            widget.add_row(*(Text(cell, style=style) for cell in row), key=key)
        if not filling.placed and filling.key is not None and filling.key in widget.rows:
            widget.move_cursor(row=widget.get_row_index(filling.key))  # a refresh re-sorts: the cursor stays on its row
            filling.placed = True
        if widget.row_count < len(filling.rows):
            self.call_after_refresh(self._more_rows, name, filling, MORE_ROWS)
            return
        del self.filling[name]
        if not filling.placed and widget.row_count:  # its row is gone: where it was
            widget.move_cursor(row=min(filling.row, widget.row_count - 1))
