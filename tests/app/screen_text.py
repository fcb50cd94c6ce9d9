"""The screen as a person sees it, as plain text: every line of the terminal, composed as Textual draws it
(`screen_text`), or as the terminal holds it after every frame the app sent (`Terminal`)."""

from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console
from rich.segment import ControlType


def screen_text(app) -> list[str]:
    """The terminal's lines, top to bottom, without colour."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        color_system=None,
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text().splitlines()[:height]


class Terminal:
    """What the app sent its terminal, cell by cell: each frame (the whole screen, or only the regions Textual
    repaints) lands on what was there, as on a real terminal. A region Textual never repaints keeps its old
    cells here, which `screen_text` (composed afresh from the widgets) cannot show. Made before the app runs."""

    def __init__(self, app) -> None:
        self.app = app
        self.cells: list[list[str]] = []
        self.console = Console(width=1000, file=io.StringIO(), color_system=None, legacy_windows=False)
        app._display = self._write  # where Textual's screens send each frame, headless or not

    def _write(self, _screen, frame) -> None:
        if frame is None or self.app._batch_count:  # as App._display: a frame made inside a batch is dropped
            return
        width, height = self.app.size
        if len(self.cells) != height or len(self.cells[0]) != width:
            self.cells = [[" "] * width for _ in range(height)]
        x = y = 0
        for segment in self.console.render(frame):
            for control in segment.control or ():
                if control[0] == ControlType.CURSOR_MOVE_TO:
                    x, y = control[1], control[2]
            if segment.control or segment.text == "\n":
                continue
            for char in segment.text:
                if 0 <= y < height and 0 <= x < width:
                    self.cells[y][x] = char
                x += cell_len(char)

    def lines(self) -> list[str]:
        return ["".join(row) for row in self.cells]
