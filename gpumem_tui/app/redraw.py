"""Redraw only what changed: a Static is updated when its content's key differs from the last one drawn,
and laid out again only when its shape (its number of lines) changes.

A refresh every second would otherwise re-render and re-lay-out every widget on screen, which costs far
more than the data collection behind it.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static


def update(static: Static, content, key: object = None, shape: object = None) -> None:
    """`key` defaults to the content itself (rich Text compares by text and style); tables pass a tuple of
    the values they show. `shape` defaults to a Text's line count; a new shape triggers a layout."""
    token = content if key is None else key
    if getattr(static, "_drawn_key", object()) == token:
        return
    if shape is None and isinstance(content, Text):
        shape = content.plain.count("\n")
    layout = getattr(static, "_drawn_shape", object()) != shape
    static._drawn_key, static._drawn_shape = token, shape  # type: ignore[attr-defined]
    static.update(content, layout=layout)


def without_links(widget: Widget) -> None:
    """A widget of ours shows no links (outside text is literal, never markup): Textual need not restyle each
    row it renders for links, nor watch the mouse for them."""
    widget.set_reactive(Widget.auto_links, False)


def show(widget: Widget, visible: bool) -> None:
    """Set `display` only when it changes: each assignment restyles the widget."""
    if widget.display != visible:
        widget.display = visible
