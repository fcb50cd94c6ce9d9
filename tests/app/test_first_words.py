"""The line under the header says what broke and where, then who, within 80 columns, in check's words; and
before the first sample it says it waits for one, never a verdict."""

from __future__ import annotations

import asyncio

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.widgets.findings_panel import FindingsPanel
from gpumem_tui.app.widgets.status_line import StatusLine
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.sources.feed import Feed
from tests.app.conftest import run_to, text_of
from tests.app.screen_text import screen_text
from tests.first_words import COLUMNS, PROBLEMS


@pytest.mark.parametrize(("scenario", "at", "words"), PROBLEMS)
async def test_the_line_under_the_header_says_what_broke_at_80x24(scenario, at, words, make_app):
    app = make_app(scenario, max(0, at - 60))
    async with app.run_test(size=(COLUMNS, 24)) as pilot:
        await run_to(app, pilot, at)
        line = screen_text(app)[1]
    for said in words:
        assert said in line, line


class Silent(Feed):
    """A node whose first sample has not come yet."""

    name = "silent"

    def __init__(self) -> None:
        self.never = asyncio.Event()

    async def sample(self):
        await self.never.wait()
        raise AssertionError("the first sample never comes")


async def test_the_first_frame_waits_for_the_first_sample_and_says_no_verdict(catalog):
    app = GpuMemApp(Silent(), Judge(catalog), poll=False)
    async with app.run_test(size=(COLUMNS, 24)) as pilot:
        await pilot.pause()
        lines = screen_text(app)
        status = text_of(app.screen.query_one(StatusLine))
        findings = text_of(app.screen.query_one(FindingsPanel))
        app.exit()
    assert "waiting for the first sample" in lines[1].lower(), lines
    assert "waiting for the first sample" in status.lower()
    screen = "\n".join(lines)
    for verdict in ("Nothing needs a look", "OK", "agrees with"):
        assert verdict not in screen and verdict not in findings, screen
