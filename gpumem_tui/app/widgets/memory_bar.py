"""Memory bars: a GPU's memory as one line of text, slices drawn to scale with a character per kind."""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.text import Text

from gpumem_tui.glyphs import UNICODE, Glyphs

COMPONENT_CLASSES = {f"bar--{kind}" for kind in UNICODE.fill} | {"bar--label", "bar--over"}
LABEL_WIDTH = 9


def bar(
    label: str, slices: tuple[tuple[str, str, int], ...], scale_bytes: int, width: int, style: Callable[[str], Style],
    glyphs: Glyphs = UNICODE,
) -> Text:
    """`slices` of (name, kind, bytes) scaled so `scale_bytes` fills `width` cells after the label, each
    kind in its fill character of `glyphs`; a `»` marks slices that run past the card."""
    cells = max(1, width - LABEL_WIDTH)
    text = Text(f"{label[: LABEL_WIDTH - 1]:<{LABEL_WIDTH}}", style=style("bar--label"))
    scale = max(1, scale_bytes)
    drawn, edge = 0, 0.0
    for _name, kind, size in slices:
        edge += max(0, size) * cells / scale
        count = min(cells, round(edge)) - drawn
        if count > 0:
            text.append(glyphs.fill.get(kind, "?") * count, style=style(f"bar--{kind}"))
            drawn += count
    if edge > cells + 0.5:
        text.append(glyphs.over, style=style("bar--over"))
    return text
