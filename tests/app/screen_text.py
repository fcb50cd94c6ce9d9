"""The screen as a person sees it, as plain text: every line of the terminal, composed as Textual draws it."""

from __future__ import annotations

import io

from rich.console import Console


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
