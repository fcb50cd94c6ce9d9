"""StatusLine: the node's verdict in one line, always on screen: `check`'s status line (`headline.verdict`),
then the titles of the other findings that need a look, cut at the screen's edge."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from gpumem_tui.app.redraw import update, without_links
from gpumem_tui.app.tone import severity_style, tone
from gpumem_tui.diagnosis.findings.headline import Verdict
from gpumem_tui.text import literal

SEVERITY = ("info", "warning", "critical")


class StatusLine(Static):
    """One line whatever the width: what comes after the headline is cut, never wrapped."""

    DEFAULT_CSS = "StatusLine { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        without_links(self)

    def show(self, verdict: Verdict, others: list[str]) -> None:
        """`verdict`: what `check`'s status line says, in its words; `others`: titles of the other findings
        above info, in the order `check` lists them."""
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        if not verdict.status:
            text.append(verdict.title, style="dim")  # nothing judged yet
        elif not verdict.level:
            text.append(str(verdict), style=tone(self.app, "success"))
        else:
            style = severity_style(self.app, SEVERITY[verdict.level])
            text.append(f"{verdict.status} - ", style=style).append(verdict.title, style="bold")
            text.append(f"; {verdict.also}" if verdict.also else "", style=style)
        for i, title in enumerate(others):
            text.append(f"{':' if i == 0 and verdict.also else ';'} {literal(title)}", style="dim")
        update(self, text)
