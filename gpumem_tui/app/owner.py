"""The app a widget or screen belongs to, typed as this app: what they read from it (glyphs) and the
actions they call on it. Textual types `node.app` as any App."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from gpumem_tui.app.app import GpuMemApp


def owner(node: DOMNode) -> GpuMemApp:
    return cast("GpuMemApp", node.app)
