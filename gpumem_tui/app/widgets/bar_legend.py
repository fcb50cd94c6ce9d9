"""BarLegend: what each fill character of the measured and planned bars stands for, in the bars' colours."""

from __future__ import annotations

from textual.widgets import Static

from gpumem_tui.app.widgets.memory_bar import COMPONENT_CLASSES, legend
from gpumem_tui.glyphs import Glyphs


class BarLegend(Static):
    """Drawn once, in `glyphs`: it never changes while the app runs."""

    COMPONENT_CLASSES = COMPONENT_CLASSES

    def __init__(self, glyphs: Glyphs, **kwargs) -> None:
        super().__init__(**kwargs)
        self.glyphs = glyphs

    def on_mount(self) -> None:
        self.update(legend(self.get_component_rich_style, self.glyphs))
