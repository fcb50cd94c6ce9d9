"""A notification leaves nothing behind: once it has gone, the terminal holds what the widgets compose.

Textual can keep a toast's last frame on the terminal when the screen's map is read between the toast's
removal and the next layout (docs/design/toasts.md). On a node that happens when a refresh changed the rows
below the fold (the processes, an engine card) while the toast was up: every second on a live node, and on
a busy CPU the toast's expiry drifts off the refresh's beat into that state. Here one refresh lands while the
toast is up and the toast then expires on a quiet screen, so the state is reached every run."""

from __future__ import annotations

import pytest

import gpumem_tui.app.screens.main as main_screen
from gpumem_tui.demo import load_scenario
from gpumem_tui.demo.scenario import intro
from tests.app.conftest import refresh, settle
from tests.app.screen_text import Terminal, screen_text
from tests.app.waiting import until

NOTE_S = 3.0
"""How long each note stays here: long enough to outlast one refresh on a loaded machine."""
SCENARIO = "kv-pressure"


@pytest.mark.parametrize("note", ["opening note", "sort notice"])
async def test_a_note_that_left_leaves_nothing_on_the_terminal(note, make_app, monkeypatch):
    monkeypatch.setattr(main_screen, "INTRO_S", NOTE_S)
    scenario = load_scenario(SCENARIO)
    app = make_app(SCENARIO, at=scenario.start_s)
    monkeypatch.setattr(type(app), "NOTIFICATION_TIMEOUT", NOTE_S)
    if note == "opening note":
        app.demo_feed.intro = intro(scenario)  # the words `--demo kv-pressure` opens with
    terminal = Terminal(app)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(app, pilot)
        if note == "sort notice":
            await pilot.press("s")
        [said] = [n.message for n in app._notifications]
        first_words = " ".join(said.split()[:3])
        await until(pilot, lambda: any(first_words in line for line in terminal.lines()))
        assert any(first_words in line for line in terminal.lines()), "the note is on the terminal"
        app.demo_clock.set(app.demo_clock() + 5)
        await refresh(app, pilot)  # the processes and the engine card, below the fold, change
        assert app.screen.query("Toast"), f"the note left before the refresh: raise NOTE_S ({NOTE_S} s)"
        await until(pilot, lambda: not app.screen.query("Toast"))
        await pilot.pause()
        shown = terminal.lines()
        assert not [line for line in shown if first_words in line]
        assert [line.rstrip() for line in shown] == [line.rstrip() for line in screen_text(app)]
