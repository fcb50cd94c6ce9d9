"""The node screen's compositor: Textual's, doing less for a refresh that changes a few rows. A frame that
repaints some regions renders only the widgets those regions cross: Textual rendered every widget whose
container crossed the regions' bounding box, and the header's clock at the top and the engine cards at the
bottom made that box the whole screen every second. And repainting a widget it has placed but does not show
(the process table below the fold) leaves its map of every widget standing: Textual took such a widget for a
new one, and the next size asked placed every widget on the screen again (docs/design/app.md)."""

from __future__ import annotations

from collections.abc import Iterable

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget


class PlacedCompositor(Compositor):
    """The picture is Textual's: a widget no repainted region crosses adds nothing to the rows a partial
    update sends, and the map is rebuilt when a layout or a scroll moves widgets, or when a widget it has
    not placed yet is drawn."""

    def __init__(self) -> None:
        super().__init__()
        self._repainting: list[Region] | None = None
        """The regions of the partial update being rendered."""

    def update_widgets(self, widgets: set[Widget]) -> None:
        placed = not self._full_map_invalidated and widgets.issubset(self._full_map.keys())
        super().update_widgets(widgets)
        if placed:
            self._full_map_invalidated = False

    def render_partial_update(self) -> ChopsUpdate | None:
        self._repainting = list(self._dirty_regions)
        try:
            return super().render_partial_update()
        finally:
            self._repainting = None

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        """Each visible widget's rows, as Textual renders them; in a partial update only the widgets whose
        visible part a repainted region crosses."""
        repainting = self._repainting
        if repainting is None:
            yield from super()._get_renders(crop)
            return
        for widget, (region, clip) in self.visible_widgets.items():
            shown = region.intersection(clip)
            if shown and any(shown.overlaps(dirty) for dirty in repainting):
                yield region, clip, widget.render_lines(shown.translate(-region.offset))
