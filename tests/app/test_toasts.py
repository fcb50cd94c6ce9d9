"""A notification leaves nothing behind: once it has gone, the terminal holds what the widgets compose; and
none covers a box (help, a sheet) or shows through its backdrop: the notes wait until it closes.

Textual can keep a toast's last frame on the terminal when the screen's map is read between the toast's
removal and the next layout (docs/design/toasts.md). On a node that happens when a refresh changed the rows
below the fold (the processes, an engine card) while the toast was up: every second on a live node, and on
a busy CPU the toast's expiry drifts off the refresh's beat into that state. Here one refresh lands while the
toast is up and the toast then expires on a quiet screen, so the state is reached every run."""

from __future__ import annotations

import pytest

import gpumem_tui.app.screens.main as main_screen
from gpumem_tui.app.screens.details import DetailsScreen
from gpumem_tui.app.screens.forensics import ForensicsScreen
from gpumem_tui.app.screens.help import HelpScreen
from gpumem_tui.app.screens.main import MainScreen
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


def _toasts(app) -> list:
    """Every toast mounted on any screen of the stack: the current one's, and those a box's backdrop shows."""
    return [toast for screen in app.screen_stack for toast in screen.query("Toast")]


async def test_help_opened_at_once_has_no_toast_over_or_under_it_and_the_notes_wait():
    """`--demo`, `?` at once: the opening note, and a note raised while the help is open, show neither over the
    box nor through its backdrop; once it closes both show, the opening one for the time it had left."""
    from tests.app.test_demo_intro import _app  # the app exactly as `gpumem-tui --demo` builds it

    app = _app("--demo")
    terminal = Terminal(app)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.press("question_mark")  # before the first refresh landed
        await settle(app, pilot)
        assert isinstance(app.screen, HelpScreen)
        app.node_screen.notify("raised while the help is open", markup=False)  # a recording's, a sort's: any
        await pilot.pause()
        await pilot.pause()
        assert not _toasts(app)
        for lines in (terminal.lines(), screen_text(app)):
            assert not [line for line in lines if "story shows" in line or "raised while" in line]
        await pilot.press("escape")
        await until(pilot, lambda: len(_toasts(app)) == 2)
        assert isinstance(app.screen, MainScreen)
        notes = {note.message.split("\n")[0]: note for note in app._notifications}
        assert "raised while the help is open" in notes
        [opening] = [note for note in notes.values() if "story shows" in note.message]
        assert opening.time_left > main_screen.INTRO_S / 2  # it waited: its time did not run out under the box
        await until(pilot, lambda: any("raised while" in line for line in terminal.lines()))
        assert any("raised while" in line for line in terminal.lines())


@pytest.mark.parametrize("opening", [("enter", DetailsScreen), ("f", ForensicsScreen)])
async def test_a_note_on_show_waits_while_a_sheet_is_open(opening, make_app):
    key, kind = opening
    app = make_app("healthy-8b")
    terminal = Terminal(app)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await settle(app, pilot)
        await pilot.press("s")  # the sort notice
        await until(pilot, lambda: any("processes sorted" in line for line in terminal.lines()))
        await pilot.press(key)
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, kind) and not _toasts(app)
        assert not [line for line in terminal.lines() if "processes sorted" in line]
        await pilot.press("escape")
        await until(pilot, lambda: any("processes sorted" in line for line in terminal.lines()))
        assert isinstance(app.screen, MainScreen) and len(_toasts(app)) == 1
