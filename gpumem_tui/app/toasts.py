"""Repaint a screen whole when a notification comes or goes, so no toast stays on the terminal after it left.

Textual 8.2.8 repaints what a removed widget covered only where its compositor's last full map still holds
that widget; a read of the map between the removal and the next layout rebuilds it without the toast, and its
cells are never repainted (docs/design/toasts.md). Remove this once Textual repaints what a toast left."""

from __future__ import annotations

from weakref import WeakSet

from textual.app import App
from textual.screen import Screen

RACK = "ToastRack"
"""Textual's container of toasts: one per screen, each toast a child of it."""


def repaint_when_toasts_change(app: App) -> None:
    """Follow every screen `app` makes current: after a layout in which its number of toasts changed, the
    whole screen is painted again from what its widgets hold (no widget renders anew)."""
    followed: WeakSet[Screen] = WeakSet()

    def follow(screen: Screen) -> None:
        if screen in followed:
            return
        followed.add(screen)
        shown = _toasts(screen)

        def laid_out(_: Screen) -> None:
            nonlocal shown
            now = _toasts(screen)
            if now != shown:
                shown = now
                screen.refresh()

        screen.screen_layout_refresh_signal.subscribe(app, laid_out, immediate=True)

    app.screen_change_signal.subscribe(app, follow, immediate=True)


def _toasts(screen: Screen) -> int:
    return sum(len(rack.children) for rack in screen.query_children(RACK))
