"""The node screen's compositor: Textual's, except that repainting a widget it has placed and does not show
(the process table below the fold) leaves its map of every widget standing. Textual takes such a widget for
a new one and throws the map away, and the next question about any widget's size places every widget on
the screen again: the process table's cells change most seconds, and that cost more than drawing the cards
(docs/design/app.md)."""

from __future__ import annotations

from textual._compositor import Compositor
from textual.widget import Widget


class PlacedCompositor(Compositor):
    """A repaint moves nothing: the map is rebuilt when a layout or a scroll moves widgets, or when a widget
    it has not placed yet is drawn, as in Textual."""

    def update_widgets(self, widgets: set[Widget]) -> None:
        placed = not self._full_map_invalidated and widgets.issubset(self._full_map.keys())
        super().update_widgets(widgets)
        if placed:
            self._full_map_invalidated = False
