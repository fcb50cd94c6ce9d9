"""BarLegend: what each fill character of the measured and planned bars stands for, in the bars' colours."""

from __future__ import annotations

from textual.widgets import Static

from gpumem_tui.app.owner import owner
from gpumem_tui.app.widgets.memory_bar import COMPONENT_CLASSES, legend


class BarLegend(Static):
    """Drawn once: it never changes while the app runs."""

    COMPONENT_CLASSES = COMPONENT_CLASSES

    def on_mount(self) -> None:
        self.update(legend(self.get_component_rich_style, owner(self).glyphs))
