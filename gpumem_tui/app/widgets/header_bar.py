"""HeaderBar: source (live / demo / replay and position), paused, recording, unit, interval, sample age,
host, driver version and time, in one line. When the line is too narrow the optional parts go first, the
state flags last."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import PurePath

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from gpumem_tui.app.redraw import update, without_links
from gpumem_tui.app.tone import tone
from gpumem_tui.app.view import Header
from gpumem_tui.text import literal

GAP = "  "


class HeaderBar(Static):
    """One line that says where the numbers come from, how fresh they are and what state the app is in."""

    DEFAULT_CSS = "HeaderBar { height: 1; }"

    parts: list[tuple[str, Style, int]] = []
    """(text, style, rank) in the order shown; the highest rank is dropped first when the line is too narrow."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        without_links(self)

    def show(self, header: Header) -> None:
        dim = Style(dim=True)
        parts = [("gpumem-tui", Style(bold=True), 5), (literal(header.source_label), Style(bold=True), 0)]
        if header.paused:
            parts.append(("PAUSED", tone(self.app, "warning", True), 0))
        if header.recording:
            rec = tone(self.app, "error", True)
            parts += [("REC", rec, 0), (literal(PurePath(header.recording).name), rec, 2)]
        parts.append((header.unit, dim, 1))
        age_s, interval_s, sample = header.age_s, header.interval_s, header.sample
        if age_s is not None:
            old = age_s > 3 * interval_s
            parts.append((f"age {age_s:.0f} s", tone(self.app, "warning", True) if old else dim, 1 if old else 3))
        parts.append((f"every {interval_s:g} s", dim, 3))
        if sample is not None:
            parts.append((literal(sample.hostname), Style(), 4))
            if sample.driver_version:  # as nvidia-smi's header; gives way before the app's name
                parts.append((f"driver {literal(sample.driver_version)}", dim, 5))
            when = datetime.fromtimestamp(sample.timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            parts.append((when, Style(), 6))
        self.parts = parts
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """Redrawn only when what fits the width changed."""
        update(self, fitted(list(self.parts), self.size.width))


def fitted(parts: list[tuple[str, Style, int]], width: int) -> Text:
    """The parts that fit in `width`, dropping the highest rank first (the later one among equals)."""
    while len(parts) > 1 and sum(len(p[0]) for p in parts) + len(GAP) * (len(parts) - 1) > width:
        worst = max(range(len(parts)), key=lambda i: (parts[i][2], i))
        if parts[worst][2] == 0:
            break
        del parts[worst]
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    for i, (shown, style, _rank) in enumerate(parts):
        text.append(GAP if i else "").append(shown, style=style)
    return text
