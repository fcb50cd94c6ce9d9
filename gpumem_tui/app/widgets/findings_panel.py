"""FindingsPanel: what needs a look, most severe first: the title, then the numbers and what to try."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from gpumem_tui.app.redraw import update
from gpumem_tui.app.tone import severity_style
from gpumem_tui.diagnosis.findings.records import Finding
from gpumem_tui.text import literal

INDENT = 9


class FindingsPanel(Static):
    """Warnings and critical findings carry their explanation; info findings stay one dim title. Every
    wrapped line stays indented under its title (a two-column grid: severity, text). Drawn again only when
    the findings change."""

    def show(self, findings: list[Finding], clear: str) -> None:
        """`clear`: what is said when nothing needs a look (as `check` says it, from the plans compared)."""
        key = (clear, *((f.severity, f.title, f.explanation, f.try_this) for f in findings))
        grid = Table.grid()
        grid.add_column(width=INDENT, no_wrap=True)
        grid.add_column(ratio=1)
        for finding in findings:
            head = Text(f"{finding.severity.upper():<8} ", style=severity_style(self.app, finding.severity))
            grid.add_row(head, Text(literal(finding.title), style="bold" if finding.severity != "info" else "dim"))
            if finding.severity != "info":
                grid.add_row("", Text(literal(finding.explanation)))
                grid.add_row("", Text(f"try: {literal(finding.try_this)}", style="dim"))
        if any(f.severity != "info" for f in findings):
            update(self, grid, key=key, shape=key)
        else:
            update(self, Group(Text(clear, style="dim"), grid), key=key, shape=key)
