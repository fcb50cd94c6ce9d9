"""FindingsPanel: what needs a look, most severe first: the title, then the numbers and what to try."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Group, RenderableType
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
    the findings change, and laid out again only when their number of lines at this width changes: the
    numbers in an explanation change every second, its height seldom does."""

    def show(self, findings: list[Finding], clear: str) -> None:
        """`clear`: what is said when nothing needs a look (as `check` says it, from the plans compared)."""
        key = (clear, *((f.severity, f.title, f.explanation, f.try_this) for f in findings))
        if key == getattr(self, "_drawn_key", None):
            return
        rows: list[tuple[Text | str, Text]] = []
        for finding in findings:
            head = Text(f"{finding.severity.upper():<8} ", style=severity_style(self.app, finding.severity))
            rows.append((head, Text(literal(finding.title), style="bold" if finding.severity != "info" else "dim")))
            if finding.severity != "info":
                rows.append(("", Text(literal(finding.explanation))))
                rows.append(("", Text(f"try: {literal(finding.try_this)}", style="dim")))
        grid = Table.grid()
        grid.add_column(width=INDENT, no_wrap=True)
        grid.add_column(ratio=1)
        for row in rows:
            grid.add_row(*row)
        above = None if any(f.severity != "info" for f in findings) else Text(clear, style="dim")
        shown = grid if above is None else Group(above, grid)
        update(self, shown, key=key, shape=self._shape(shown, above, [text for _, text in rows]))

    def _shape(self, shown: RenderableType, above: Text | None, texts: list[Text]) -> object:
        """(width, lines) drawn at this panel's width: each text wrapped in the grid's second column, counted
        without drawing the grid, unless a word is wider than that column (the grid then narrows its first
        column: drawn to count). Before the panel has a width, a shape equal to none, so it is laid out."""
        width = self.size.width
        if not width:
            return object()
        console = self.app.console
        if max((cell_len(word) for text in texts for word in text.plain.split()), default=0) > width - INDENT:
            return width, len(console.render_lines(shown, console.options.update_width(width), pad=False))
        lines = sum(max(1, len(text.wrap(console, width - INDENT))) for text in texts)
        return width, lines + (len(above.wrap(console, width)) if above is not None else 0)
