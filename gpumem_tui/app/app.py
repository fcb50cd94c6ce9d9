"""GpuMemApp: the one Textual app. It holds what every screen shares (the glyphs, the theme) and opens the
first screen: a node's (screens/main.py, over a Node) or the fleet's (screens/fleet.py), from which `enter`
pushes a node's screen and q or escape there pops it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App
from textual.notifications import Notify
from textual.screen import Screen

from gpumem_tui.app.node import Node
from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.app.toasts import WaitWhileBoxed, repaint_when_toasts_change
from gpumem_tui.diagnosis.findings import Finding
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.glyphs import UNICODE, Glyphs
from gpumem_tui.sources.feed import Feed

if TYPE_CHECKING:
    from gpumem_tui.app.screens.fleet import Fleet

FLEET_TITLE = "gpumem-tui fleet"


class GpuMemApp(App[None]):
    """Built from explicit inputs so the CLI and the tests make it the same way: `GpuMemApp(feed, judge, ...)`
    opens that node; `GpuMemApp.of_fleet(fleet)` opens the fleet."""

    CSS_PATH = Path(__file__).with_name("gpumem.tcss")
    TITLE = "gpumem-tui"

    def __init__(
        self,
        feed: Feed | None = None,
        judge: Judge | None = None,
        interval_s: float = 1.0,
        record_path: str | None = None,
        clock: Callable[[], float] = time.time,
        poll: bool = True,
        theme: str = "textual-dark",
        glyphs: Glyphs = UNICODE,
        also: Callable[[list[Finding]], list[Finding]] | None = None,
        fleet: Fleet | None = None,
    ):
        """The node's inputs go to its Node (app/node.py); `fleet`, given instead, opens the fleet's screen."""
        super().__init__()
        self.glyphs = glyphs
        """What bars, gauges and sparklines are drawn with: Unicode, or ASCII for `--ascii` and non-UTF-8 terminals."""
        self.theme = theme
        self.fleet = fleet
        self.boxed_toasts = WaitWhileBoxed(self)
        """The notes that wait while a box is open, to show once it closes."""
        self.node: Node | None = None
        """The node the app opens on; None where it opens on the fleet."""
        if fleet is not None:
            self.title = FLEET_TITLE
        elif feed is not None and judge is not None:
            self.node = Node(feed, judge, interval_s, record_path, clock, poll, also)
        else:
            raise TypeError("GpuMemApp opens a node (feed and judge) or a fleet")

    @classmethod
    def of_fleet(cls, fleet: Fleet, glyphs: Glyphs = UNICODE) -> GpuMemApp:
        return cls(glyphs=glyphs, fleet=fleet)

    def _handle_exception(self, error: Exception) -> None:
        """A crash: the app exits as Textual does, but its traceback (with local variables, which may
        hold outside text) is not printed on the terminal; `gpumem-tui` prints one line and files it."""
        super()._handle_exception(error)
        self._exit_renderables.clear()

    def first_screen(self) -> Screen:
        if self.fleet is not None:
            from gpumem_tui.app.screens.fleet import FleetScreen  # a node's first frame waits for none of it

            return FleetScreen(self.fleet, self.glyphs)
        assert self.node is not None  # one or the other, said in __init__
        return MainScreen(self.node, self.glyphs)

    async def on_mount(self) -> None:
        repaint_when_toasts_change(self)
        self.boxed_toasts.follow()
        await self.push_screen(self.first_screen())  # awaited: its first read has started once the app is ready

    def on_notify(self, message: Notify) -> None:
        self.boxed_toasts.arrived(message)  # before Textual's handler, which it may keep from running

    @property
    def node_screen(self) -> MainScreen | None:
        """The node's screen on show, under any sheet opened over it (help, details, forensics, the planner)."""
        return next((s for s in reversed(self.screen_stack) if isinstance(s, MainScreen)), None)
