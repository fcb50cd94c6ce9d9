"""FindingsPanel: what needs a look, most severe first: the title, then the numbers and what to try."""

from __future__ import annotations

from functools import partial

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gpumem_tui.app.tone import severity_style
from gpumem_tui.app.widgets.lines import Keyed, Line, Lines
from gpumem_tui.diagnosis.findings.records import Finding
from gpumem_tui.text import literal

INDENT = 9

Row = tuple[Text | str, Text]
"""(severity, text): the two columns of one row; a finding's explanation and what to try have no severity."""


class FindingsPanel(Lines):
    """Warnings and critical findings carry their explanation; info findings stay one dim title. Every
    wrapped line stays indented under its title (two columns: severity, text). Drawn again only when what it
    shows changes (an info finding's explanation, not shown, changes every second), and then only the lines
    that changed (`Lines`): the numbers in an explanation change every second, the rest seldom does."""

    DEFAULT_CSS = "FindingsPanel { height: auto; }"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._grid_rows: list[Row] = []
        self._above: Text | None = None
        self._shown: tuple = ()

    def show(self, findings: list[Finding], clear: str) -> None:
        """`clear`: what is said when nothing needs a look (as `check` says it, from the plans compared)."""
        key = (
            clear,
            *((f.severity, f.title) + (() if f.severity == "info" else (f.explanation, f.try_this)) for f in findings),
        )
        if key == self._shown:
            return
        self._shown = key
        rows: list[Row] = []
        for finding in findings:
            head = Text(f"{finding.severity.upper():<8} ", style=severity_style(self.app, finding.severity))
            rows.append((head, Text(literal(finding.title), style="bold" if finding.severity != "info" else "dim")))
            if finding.severity != "info":
                rows.append(("", Text(literal(finding.explanation))))
                rows.append(("", Text(f"try: {literal(finding.try_this)}", style="dim")))
        self._grid_rows = rows
        self._above = None if any(f.severity != "info" for f in findings) else Text(clear, style="dim")
        self.redraw()

    @property
    def content(self) -> RenderableType:
        """The panel as one renderable: a grid of the two columns, under the clear text where nothing needs a
        look. Textual draws it as it is where a word is wider than the text's column (the grid narrows the
        first column)."""
        grid = _grid(self._grid_rows)
        return grid if self._above is None else Group(self._above, grid)

    def render(self) -> RenderableType:
        return self.content

    def lines(self, width: int) -> list[Line] | None:
        """Each row of the grid on its own, rendered as the whole grid renders it (the same columns, the text's
        as wide as its widest text up to the width left), and the clear text above; None where a word is wider
        than the text's column (the grid narrows the first column then: it is drawn whole)."""
        texts = [text for _, text in self._grid_rows]
        words = max((cell_len(word) for t in texts for word in t.plain.split()), default=0)
        if width - INDENT < max(1, words):
            return None
        column = min(width - INDENT, max(text.cell_len for text in texts)) if texts else 0
        above: list[Line] = [Keyed(("above", self._above.plain), partial(Group, self._above))] if self._above else []
        return above + [
            Keyed((column, *_key(head, text)), partial(_grid, [(head, text)], column)) for head, text in self._grid_rows
        ]


def _key(head: Text | str, text: Text) -> tuple:
    """What a row shows: its words and their styles (a Text's equality leaves out its style)."""
    return (str(head), str(getattr(head, "style", "")), text.plain, str(text.style), tuple(text.spans))


def _grid(rows: list[Row], column: int | None = None) -> Table:
    """The two columns: the severity, then the text wrapped under it (`column` cells wide; by default, as
    wide as the rows need and the width allows)."""
    grid = Table.grid()
    grid.add_column(width=INDENT, no_wrap=True)
    grid.add_column(ratio=1) if column is None else grid.add_column(width=column)
    for row in rows:
        grid.add_row(*row)
    return grid
