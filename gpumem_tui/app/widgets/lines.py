"""Lines: a widget drawn as a list of lines, each rendered once and kept. A refresh renders again only the
lines that changed and repaints only their rows; the widget is laid out again only when its number of rows
changes. An engine card changes two of its four lines a second, the findings panel the few rows that hold
numbers: rendering the whole widget again cost more than the data behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from rich.console import RenderableType
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget

from gpumem_tui.app.redraw import without_links


class Keyed(NamedTuple):
    """A line that is not a Text (a rich renderable, rendered by rich as Textual renders one), with what
    it shows as its key: an equal key is not rendered again, nor its renderable made (`make`)."""

    key: Any
    make: Callable[[], RenderableType]


Line = Text | Keyed
"""One line of a widget; it wraps into more than one row where it is wider than the widget."""


def _same(old: Line, new: Line) -> bool:
    if isinstance(old, Text) and isinstance(new, Text):
        return old == new and old.style == new.style  # Text's own equality leaves out its style
    return isinstance(old, Keyed) and isinstance(new, Keyed) and old.key == new.key


@dataclass(frozen=True)
class _Rendered:
    """What the rows were rendered at: the width, the widget's style, and each line with its rows."""

    width: int = -1
    style: object = None
    lines: tuple[tuple[Line, list[Strip]], ...] = ()
    rows: list[Strip] = field(default_factory=list)


class Lines(Widget):
    """A subclass gives `lines(width)`, the lines it shows at a width (None: Textual renders `render()` as for
    any widget), and calls `redraw()` when they may have changed. `render()` joins Text lines: Textual
    draws that one Text while text is selected in the widget (a selection's offsets are the whole text's)."""

    DEFAULT_CSS = "Lines { height: auto; }"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._rendered = _Rendered()
        without_links(self)

    def lines(self, width: int) -> list[Line] | None:  # noqa: ARG002 - a subclass's lines depend on it
        return []

    def render(self) -> RenderableType:
        return Text("\n").join(line for line in self.lines(self.size.width) or [] if isinstance(line, Text))

    def redraw(self) -> None:
        """Render the lines that changed and repaint their rows; a new number of rows lays the widget out."""
        before, width = self._rendered, self.size.width
        if not width or (before.width, before.style) != (width, self.visual_style) or self.text_selection:
            self.refresh(layout=True)  # rendered whole at its width when it is next painted
            return
        after = self._render_lines(width)
        if after is None or len(before.rows) != len(after.rows) or len(before.lines) != len(after.lines):
            self.refresh(layout=True)
            return
        y, changed = 0, []
        for old, new in zip(before.lines, after.lines, strict=True):
            if old is not new:
                changed.append(Region(0, y, width, len(new[1])))
            y += len(new[1])
        if changed:
            self.refresh(*changed)  # one repaint of the rows that changed

    def _render_lines(self, width: int) -> _Rendered | None:
        """The rows at `width`, each line rendered again only when it changed; None: no lines to render."""
        lines = self.lines(width)
        if lines is None:
            self._rendered = _Rendered()
            return None
        style, before = self.visual_style, self._rendered
        kept = before.lines if (before.width, before.style) == (width, style) else ()
        drawn: list[tuple[Line, list[Strip]]] = []
        for i, line in enumerate(lines):
            if i < len(kept) and _same(kept[i][0], line):
                drawn.append(kept[i])
            else:
                drawn.append((line, self._rows(i, line, width, style)))
        self._rendered = _Rendered(width, style, tuple(drawn), [row for _, rows in drawn for row in rows])
        return self._rendered

    def _rows(self, index: int, line: Line, width: int, style) -> list[Strip]:
        """One line rendered as Textual renders it within the whole: a Text as line `index` of the joined
        text (after `index` empty lines, so each character's offset, which a selection reads, names its line)."""
        if isinstance(line, Keyed):
            return Visual.to_strips(self, visualize(self, line.make()), width, None, style)
        visual = visualize(self, Text("\n" * index).append_text(line) if index else line, markup=False)
        return Visual.to_strips(self, visual, width, None, style)[index:]

    def get_content_height(self, container, viewport, width: int) -> int:
        """The rows of the lines at this width, wrapped as Textual wraps them."""
        if not width:
            return 0
        rendered = self._render_lines(width)
        return super().get_content_height(container, viewport, width) if rendered is None else len(rendered.rows)

    def render_line(self, y: int) -> Strip:
        width, rendered = self.size.width, self._rendered
        if self.text_selection is None:
            if (rendered.width, rendered.style) != (width, self.visual_style):
                rendered = self._render_lines(width) or _Rendered()
            if rendered is not None and rendered.lines:
                self._dirty_regions.clear()
                return rendered.rows[y] if y < len(rendered.rows) else Strip.blank(width, self.visual_style.rich_style)
        return super().render_line(y)
