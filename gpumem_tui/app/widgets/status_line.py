"""StatusLine: the node's verdict in one line, always on screen: `check`'s summary (the status line less
its status word where the counts say it), then the titles of the other findings that need a look, cut at the
screen's edge."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from gpumem_tui.app.redraw import update
from gpumem_tui.app.tone import severity_style, tone
from gpumem_tui.diagnosis.findings.headline import STATUS
from gpumem_tui.text import literal

SEVERITY = ("info", "warning", "critical")


class StatusLine(Static):
    """One line whatever the width: what comes after the headline is cut, never wrapped."""

    DEFAULT_CSS = "StatusLine { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }"

    def show(self, summary: str, level: int, others: list[str]) -> None:
        """`summary`: what `check`'s status line says after its status word; `level`: 0 OK, 1 warning,
        2 critical; `others`: titles of the other findings above info, in the order `check` lists them."""
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        if not level:
            text.append(summary, style=tone(self.app, "success"))
        else:
            counted = summary[:1].isdigit()  # `2 critical, 1 warning: ...` says its severity already
            text.append("" if counted else f"{STATUS[level]} - ", style=severity_style(self.app, SEVERITY[level]))
            head, colon, title = summary.partition(": ") if counted else ("", "", summary)
            text.append(head + colon, style=severity_style(self.app, SEVERITY[level]))
            text.append(title, style="bold")
        for title in others:
            text.append(f"; {literal(title)}", style="dim")
        update(self, text)
