"""The help reflows to its box at any terminal size, scrolls where it is longer than the screen, and no
notification covers it: on the node screen and on the fleet's."""

from __future__ import annotations

import re

import pytest
from textual.containers import VerticalScroll

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.fleet import Fleet
from gpumem_tui.app.screens.help import HelpScreen
from tests.app.conftest import settle
from tests.app.screen_text import screen_text
from tests.app.test_fleet_screen import fleet_sample as fleet_sample  # the fixture, shared

KEYS = [r"\bs +sort processes", r"\bg +GB / GiB", r"\? or h +this help", r"\+ / - +refresh faster / slower"]
"""Each a key with what it does, which must stay on one row (`s sort` then `processes` on the next broke it)."""


HEADINGS = {"Keys", "Each", "Units", "Sources", "Tables", "Source"}


def _assert_reflowed(app, rows: list[str]) -> None:
    """No row of a paragraph ends early: the next row's first word would not have fitted on it (a newline
    typed into the text at 115 characters left `check`` alone on a row, then `prints ...` on the next)."""
    width = app.screen.query_one("#help-text").content_region.width
    inside = [row.split("│")[1].rstrip() for row in rows if row.count("│") >= 2]
    for row, after in zip(inside, inside[1:], strict=False):
        if row.strip() and after.strip() and not after.startswith("  ") and after.split()[0] not in HEADINGS:
            assert len(row) + 1 + len(after.split()[0]) > width, (row, after)


async def _help_rows(app, pilot) -> list[str]:
    await pilot.press("question_mark")
    await pilot.pause()
    assert isinstance(app.screen, HelpScreen)
    box = app.screen.query_one("#help-box", VerticalScroll)
    rows = screen_text(app)
    box.scroll_end(animate=False)
    await pilot.pause()
    return rows + screen_text(app)


@pytest.mark.parametrize("size", [(120, 30), (80, 24), (200, 50)])
async def test_node_help_reflows_scrolls_and_is_not_covered(make_app, size):
    app = make_app("healthy-8b")
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        rows = await _help_rows(app, pilot)
        _assert_reflowed(app, rows[: len(rows) // 2])
        for key in KEYS:
            assert any(re.search(key, row) for row in rows), key
        inside = [row.split("│")[1].strip() for row in rows if row.count("│") >= 2]  # the box's rows
        text = [row for row in inside if row]
        assert "pods stand in for processes." in " ".join(text[-3:])  # the help's last line, scrolled to
        assert not app._notifications  # the demo's intro waits for the box to close (test_toasts.py)


async def test_fleet_help_reflows(fleet_sample):  # noqa: F811 - the fixture imported above
    async def read():
        return fleet_sample

    fleet = Fleet(read, "http://prom.example:9090", interval_s=15, poll=False, clock=lambda: 0.0)
    app = GpuMemApp.of_fleet(fleet)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        rows = await _help_rows(app, pilot)
        _assert_reflowed(app, rows[: len(rows) // 2])
