"""FindingsPanel: what needs a look, most severe first, each in one line with its numbers."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from gpumem_tui.app.quiet import update
from gpumem_tui.text import literal

SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}


class FindingsPanel(Static):
    """Findings as (severity, title) pairs; an empty list says so plainly."""

    def show(self, findings: list[tuple[str, str]]) -> None:
        if not findings:
            update(self, Text("No findings: the measurement agrees with the plan.", style="dim"))
            return
        text = Text()
        for i, (severity, title) in enumerate(findings):
            if i:
                text.append("\n")
            text.append(f"{severity.upper():<8} ", style=SEVERITY_STYLE.get(severity, ""))
            text.append(literal(title))
        update(self, text)
