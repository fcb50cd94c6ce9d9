"""MemoryBar: one horizontal bar of a GPU's memory, slices drawn to scale with a character per kind."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

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


class MemoryBar(Widget):
    """Slices `(name, kind, bytes)` scaled so `scale_bytes` fills the width; the label sits on the left."""

    DEFAULT_CSS = "MemoryBar { height: 1; }"
    COMPONENT_CLASSES = {f"bar--{kind}" for kind in FILL} | {"bar--label", "bar--over"}

    slices: reactive[tuple[tuple[str, str, int], ...]] = reactive(tuple)
    scale_bytes: reactive[int] = reactive(1)
    label: reactive[str] = reactive("")

    def render(self) -> Text:
        label_width = 9
        width = max(1, self.size.width - label_width)
        text = Text(
            f"{self.label[: label_width - 1]:<{label_width}}", style=self.get_component_rich_style("bar--label")
        )
        scale = max(1, self.scale_bytes)
        drawn, edge = 0, 0.0
        for _name, kind, size in self.slices:
            edge += max(0, size) * width / scale
            cells = min(width, round(edge)) - drawn
            if cells > 0:
                text.append(FILL.get(kind, "?") * cells, style=self.get_component_rich_style(f"bar--{kind}"))
                drawn += cells
        if edge > width + 0.5:
            text.append("»", style=self.get_component_rich_style("bar--over"))
        return text
