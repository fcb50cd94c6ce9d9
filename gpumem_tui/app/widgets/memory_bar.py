"""Memory bars: a GPU's memory as one line of text, slices drawn to scale with a character per kind."""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.text import Text

from gpumem_tui.glyphs import UNICODE, Glyphs

LEGEND = {
    "measured": (
        ("engine", "engine"),
        ("process", "other process"),
        ("unattributed", "no process"),
        ("driver", "driver"),
        ("free", "free"),
    ),
    "plan": (
        ("weights", "weights"),
        ("runtime", "context"),
        ("activations", "activations"),
        ("kv", "KV pool"),
        ("reserve", "left by setting"),
        ("spare", "spare"),
    ),
}
"""What each fill character stands for, per bar; `kind` names the character in the glyph set's fill."""
COMPONENT_CLASSES = {f"bar--{kind}" for kind in UNICODE.fill} | {"bar--label", "bar--over"}
LABEL_WIDTH = 9


def bar(
    label: str,
    slices: tuple[tuple[str, str, int], ...],
    scale_bytes: int,
    width: int,
    style: Callable[[str], Style],
    glyphs: Glyphs = UNICODE,
    label_width: int = LABEL_WIDTH,
) -> Text:
    """`slices` of (name, kind, bytes) scaled so `scale_bytes` fills `width` cells after the label, each
    kind in its fill character of `glyphs`; a `»` marks slices that run past the card."""
    cells = max(1, width - label_width)
    text = Text(f"{label[: label_width - 1]:<{label_width}}", style=style("bar--label"))
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


def legend(style: Callable[[str], Style], glyphs: Glyphs = UNICODE) -> Text:
    """The fill characters of both bars and what each stands for, one line per bar (wrapped when narrow)."""
    text = Text()
    for name, entries in LEGEND.items():
        if text:
            text.append("\n")
        text.append(f"{name} ", style=style("bar--label"))
        for i, (kind, meaning) in enumerate(entries):
            text.append("  " if i else "").append(glyphs.fill[kind], style=style(f"bar--{kind}"))
            text.append(f" {meaning}", style=style("bar--label"))
    return text
