"""HeaderBar: host, source (live / demo / replay and position), time, sample age, paused, recording."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.text import Text
from textual.widgets import Static

from gpumem_tui.app.quiet import update
from gpumem_tui.app.tone import tone
from gpumem_tui.models import Sample
from gpumem_tui.text import literal


class HeaderBar(Static):
    """One line that says where the numbers come from and how fresh they are."""

    DEFAULT_CSS = "HeaderBar { height: 1; }"

    def show(
        self,
        sample: Sample | None,
        source: str,
        age_s: float | None,
        paused: bool,
        recording: str | None,
        unit: str,
        interval_s: float,
    ) -> None:
        text = Text()
        text.append("gpumem-tui ", style="bold")
        if sample is not None:
            text.append(f"{literal(sample.hostname)} ")
        text.append(f"  {literal(source)}", style="bold")
        if sample is not None:
            when = datetime.fromtimestamp(sample.timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            text.append(f"  {when}")
        if age_s is not None:
            old = age_s > 3 * interval_s
            text.append(f"  age {age_s:.0f} s", style=tone(self.app, "warning", True) if old else "dim")
        text.append(f"  every {interval_s:g} s  {unit}", style="dim")
        if paused:
            text.append("  PAUSED", style=tone(self.app, "warning", True))
        if recording:
            text.append(f"  REC {literal(recording)}", style=tone(self.app, "error", True))
        update(self, text)
