"""Typing on a screen over the monitor stays on that screen: every printable character, typed into every
field of the planner and onto help, details and forensics, leaves the monitor's state as it was."""

from __future__ import annotations

import string

import pytest

from gpumem_tui.app.screens.details import DetailsScreen
from gpumem_tui.app.screens.forensics import ForensicsScreen
from gpumem_tui.app.screens.help import HelpScreen
from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.app.screens.planner import PlannerScreen
from gpumem_tui.app.widgets.process_table import ProcessTable
from tests.app.conftest import settle

TYPED = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"]
"""Every printable character but the whitespace controls (space stays: it is the monitor's pause)."""


def monitor_state(app) -> dict:
    """What a key that reached the monitor would change."""
    main = next(s for s in app.screen_stack if isinstance(s, MainScreen))
    stack = app.screen_stack
    return {
        "unit": app.node.unit,
        "interval": app.node.interval_s,
        "recording": app.node.recorder is not None,
        "paused": app.node.paused,
        "sort": main.query_one(ProcessTable).sort_by,
        "plan": app.node.judge.plan,
        "monitor and below": [type(s).__name__ for s in stack[: stack.index(main) + 1]],
    }


def key_names(screen) -> set[str]:
    """The keys a screen binds itself: closing it, and `g` (the unit its sizes are in) on the sheets that
    show sizes, which is the app's unit and the monitor's too."""
    return {key for binding in screen.BINDINGS for key in binding.key.split(",")}


async def type_all(pilot, keys) -> None:
    for key in keys:
        await pilot.press(key)
    await pilot.pause()


def still_running(app) -> None:
    assert app.is_running and app.return_code is None and app._exception is None


async def test_the_planner_opens_on_its_search_field(make_app):
    app = make_app("idle-node")  # where an engine runs it opens on the engine's plan (test_planner_start.py)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        before = monitor_state(app)
        await pilot.press("p")
        await pilot.pause()
        assert app.focused is app.screen.query_one("#model-search")
        await type_all(pilot, "mistral")
        assert app.screen.query_one("#model-search").value == "mistral"
        assert isinstance(app.screen, PlannerScreen) and monitor_state(app) == before
        still_running(app)


PLANNER_FIELDS = [
    "#model-search",
    "#config-path",
    "#context",
    "#users",
    "#utilization",
    "#gpu",
    "#weights",
    "#kv",
    "#split",
    "#model-list",
]


async def test_every_character_typed_into_a_planner_field_stays_there(make_app):
    app = make_app("healthy-8b")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        before = monitor_state(app)
        await pilot.press("p")
        await pilot.pause()
        for field in PLANNER_FIELDS:
            app.screen.query_one(field).focus()
            await type_all(pilot, TYPED)
            if not isinstance(app.screen, PlannerScreen):  # a Select's overlay may be open: close it, not the planner
                await pilot.press("escape")
            still_running(app)
            assert isinstance(app.screen, PlannerScreen) and monitor_state(app) == before, field


@pytest.mark.parametrize("opening", [("question_mark", HelpScreen), ("enter", DetailsScreen), ("f", ForensicsScreen)])
async def test_every_character_typed_on_a_sheet_stays_there(make_app, opening):
    key, kind = opening
    app = make_app("healthy-8b")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        before = monitor_state(app)
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, kind)
        closes = key_names(app.screen)
        await type_all(pilot, [c for c in TYPED if c not in closes and _name(c) not in closes])
        still_running(app)
        assert isinstance(app.screen, kind) and monitor_state(app) == before
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen) and monitor_state(app) == before


def _name(character: str) -> str:
    from textual.keys import _character_to_key

    return _character_to_key(character)
