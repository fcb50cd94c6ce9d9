"""Memory bars: a GPU's memory as one line of text, slices drawn to scale with a character per kind."""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.text import Text

# Fill characters tell kinds apart without colour (NO_COLOR, monochrome terminals).
FILL = {
    "engine": "█",
    "process": "▓",
    "unattributed": "▒",
    "driver": "░",
    "free": "·",
    "weights": "█",
    "runtime": "▓",
    "activations": "▒",
    "graphs": "▒",
    "kv": "▆",
    "reserve": "░",
    "spare": "·",
}
COMPONENT_CLASSES = {f"bar--{kind}" for kind in FILL} | {"bar--label", "bar--over"}
LABEL_WIDTH = 9


def bar(
    label: str, slices: tuple[tuple[str, str, int], ...], scale_bytes: int, width: int, style: Callable[[str], Style]
) -> Text:
    """`slices` of (name, kind, bytes) scaled so `scale_bytes` fills `width` cells after the label;
    a `»` marks slices that run past the card."""
    cells = max(1, width - LABEL_WIDTH)
    text = Text(f"{label[: LABEL_WIDTH - 1]:<{LABEL_WIDTH}}", style=style("bar--label"))
    scale = max(1, scale_bytes)
    drawn, edge = 0, 0.0
    for _name, kind, size in slices:
        edge += max(0, size) * cells / scale
        count = min(cells, round(edge)) - drawn
        if count > 0:
            text.append(FILL.get(kind, "?") * count, style=style(f"bar--{kind}"))
            drawn += count
    if edge > cells + 0.5:
        text.append("»", style=style("bar--over"))
    return text
