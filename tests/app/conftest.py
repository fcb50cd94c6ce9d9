"""Apps over the simulated node, deterministic: frozen clock, seeded scenario, no polling timer."""

from __future__ import annotations

import pytest

from gpumem_tui.app import GpuMemApp
from gpumem_tui.judge import Judge
from gpumem_tui.overlays import ManualPlan
from gpumem_tui.sources.feed import DemoFeed
from gpumem_tui.sources.mock import ManualClock


def demo_app(scenario: str, at: float, catalog, plan: dict | None = None) -> GpuMemApp:
    clock = ManualClock(at)
    feed = DemoFeed(scenario, clock)
    manual = ManualPlan(model=catalog.model(plan.pop("model")), **plan) if plan else None
    app = GpuMemApp(feed, Judge(catalog, manual), poll=False, clock=lambda: feed.node.timestamp)
    app.demo_clock, app.demo_feed = clock, feed
    return app


@pytest.fixture
def make_app(catalog):
    return lambda scenario, at=300, plan=None: demo_app(scenario, at, catalog, dict(plan) if plan else None)


async def settle(app, pilot) -> None:
    """Wait until the refresh worker has posted and the screen has drawn it."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def refresh(app, pilot) -> None:
    app.refresh_now()
    await settle(app, pilot)


def text_of(widget) -> str:
    """What a Static shows, as plain text (rich tables and groups included)."""
    import io

    from rich.console import Console

    console = Console(width=200, file=io.StringIO(), color_system=None)
    console.print(widget.content)
    return console.file.getvalue()
