"""Repaint a screen whole when a notification comes or goes, so no toast stays on the terminal after it left;
and no toast over or under a box (a modal screen): the notes wait until it closes (WaitWhileBoxed).

Textual 8.2.8 repaints what a removed widget covered only where its compositor's last full map still holds
that widget; a read of the map between the removal and the next layout rebuilds it without the toast, and its
cells are never repainted (docs/design/toasts.md). Remove the repaint once Textual repaints what a toast left."""

from __future__ import annotations

from weakref import WeakSet

from textual.app import App
from textual.notifications import Notification, Notify
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


class WaitWhileBoxed:
    """While a box is open (a modal screen: help, a details sheet, forensics, the stop question, Textual's command
    palette), no toast covers it or shows through its dimmed backdrop. Textual draws the app's notes on whatever
    screen is current, over a box too, and leaves the toasts of the screen below in place: so the notes on show
    when a box opens, and those raised while one is open, wait here, and show once the app is back on a screen
    that is not a box, each for the time it had left. `arrived` is the app's Notify handler's; `follow` starts it."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.waiting: list[tuple[Notification, float]] = []
        """Each note that waits, with the seconds it had left when it began to wait."""

    def follow(self) -> None:
        self.app.screen_change_signal.subscribe(self.app, self._screen_changed, immediate=True)

    def arrived(self, message: Notify) -> None:
        """A note about to be shown: with a box open it waits, and Textual's own handler does not run."""
        if self.app.screen.is_modal:
            message.prevent_default()
            self.waiting.append((message.notification, message.notification.time_left))

    def _screen_changed(self, screen: Screen) -> None:
        if screen.is_modal:
            shown = [(note, note.time_left) for note in self.app._notifications]  # Textual's, unexpired
            self.app.clear_notifications()  # the box's own rack
            for below in self.app.screen_stack:  # Textual updates the current screen's toasts only
                below.query(f"{RACK} > *").remove()  # each toast in its holder
            self.waiting += shown
            return
        waiting, self.waiting = self.waiting, []
        for note, left in waiting:
            if left > 0:
                self.app.notify(
                    note.message, title=note.title, severity=note.severity, timeout=left, markup=note.markup
                )
