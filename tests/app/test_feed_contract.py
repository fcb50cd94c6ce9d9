"""Every feed offers what the app uses, declared once on `Feed`; a feed that says only where its samples
come from and gives them runs the whole app on the defaults (no clock of its own, no recording)."""

from __future__ import annotations

import inspect

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.sources.feed import Feed, LiveFeed, ReplayFeed
from tests.app.conftest import settle


def test_the_three_feeds_are_feeds_with_nothing_left_to_declare():
    for feed in (LiveFeed, DemoFeed, ReplayFeed):
        assert issubclass(feed, Feed) and not inspect.isabstract(feed), feed


class OneCard(Feed):
    """The least a feed can be: a label and samples (the simulated node's, taken through its collector)."""

    name = "one card"

    def __init__(self) -> None:
        self.demo = DemoFeed("healthy-8b", ManualClock(300))

    async def sample(self):
        return await self.demo.sample()


async def test_a_feed_with_only_a_label_and_samples_runs_every_key_the_contract_backs(catalog):
    feed = OneCard()
    app = GpuMemApp(feed, Judge(catalog), poll=False, clock=lambda: feed.demo.node.timestamp + 7)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        header = str(app.screen.query_one("#header").render())
        assert "one card" in header and "age 7 s" in header  # its age against the app's clock
        await pilot.press("space")
        assert "PAUSED" in str(app.screen.query_one("#header").render())
        await pilot.press("space")
        await pilot.press("f")  # no recording: the minutes kept in memory
        await pilot.pause()
        assert app.screen.what == "the minutes kept in memory"
    await feed.demo.aclose()
