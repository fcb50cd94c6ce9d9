"""Apps over the simulated node, deterministic: frozen clock, seeded scenario, no polling timer."""

from __future__ import annotations

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.demo_app import demo_app
from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.overlays import ManualPlan


def _app(scenario: str, at: float, catalog, plan: dict | None = None, **options) -> GpuMemApp:
    manual = ManualPlan(model=catalog.model(plan.pop("model")), **plan) if plan else None
    clock = ManualClock(at)
    app = demo_app(scenario, clock, catalog, manual, **options)
    app.demo_clock, app.demo_feed = clock, app.node.feed
    return app


@pytest.fixture
def make_app(catalog, models_waited):  # noqa: ARG001 - a deterministic app waits for its engines' names too
    return lambda scenario, at=300, plan=None, **options: _app(
        scenario, at, catalog, dict(plan) if plan else None, **options
    )


async def settle(app, pilot) -> None:
    """Wait until the refresh worker has posted and the screen has drawn it."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def refresh(app, pilot) -> None:
    app.node_screen.refresh_now()
    await settle(app, pilot)


async def run_to(app, pilot, at: float, step: float = 5.0, span: float = 60.0) -> None:
    """Refresh every `step` seconds of simulated time from `at - span` (or the app's start, if later) to
    `at`, so history has a past."""
    await settle(app, pilot)  # the refresh the app starts on mount must land first, or one is skipped
    t = max(app.demo_clock(), at - span)
    while t <= at:
        app.demo_clock.set(t)
        await refresh(app, pilot)
        t += step


def text_of(widget) -> str:
    """What a Static shows, as plain text (rich tables and groups included)."""
    import io

    from rich.console import Console

    console = Console(width=200, file=io.StringIO(), color_system=None)
    console.print(widget.content)
    return console.file.getvalue()


async def record_demo(path, scenario: str, moments) -> DemoFeed:
    """A real recording of a simulated node, one sample per moment (seconds into the scenario)."""
    from gpumem_tui.sources.replay import Recorder

    moments = list(moments)
    feed = DemoFeed(scenario, ManualClock(moments[0]))
    with Recorder(path) as recorder:
        for t in moments:
            feed.clock.set(t)
            recorder.write(await feed.sample())
    await feed.aclose()
    return feed
