"""The keys say themselves where they act, through Pilot: the footer shows `f` and shows `enter` only where the
focused widget takes it; the arrows move between one-line GPUs; help says how to close it, on the node screen
and on the fleet's (`?`); enter on a process opens a sheet a person reads; the node screen opened from the
fleet says `q back` in its footer."""

from __future__ import annotations

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.details import DetailsScreen
from gpumem_tui.app.screens.fleet import Fleet, FleetScreen
from gpumem_tui.app.screens.help import HelpScreen
from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.app.widgets.process_table import ProcessTable
from tests.app.conftest import settle, text_of
from tests.app.waiting import until


def _footer(app) -> str:
    return " ".join(str(w.render()) for w in app.screen.query("FooterKey"))


async def test_the_footer_shows_f_and_shows_enter_where_it_acts(make_app):
    app = make_app("tp4-70b")
    async with app.run_test(size=(80, 24)) as pilot:  # four GPUs at 80x24: one line each
        await settle(app, pilot)
        app.screen.set_focus(None)
        # The footer recomposes after each change of focus or bindings: wait for the keys it should show.
        await until(pilot, lambda: "f forensics" in _footer(app) and "⏎" not in _footer(app))
        assert "f forensics" in _footer(app) and "⏎" not in _footer(app)  # nothing focused takes enter
        card = app.screen.query_one("#gpu-1", GpuCard)
        card.focus()
        await until(pilot, lambda: "⏎ full card" in _footer(app))
        assert card.compact and "⏎ full card" in _footer(app)
        await pilot.press("enter")
        await until(pilot, lambda: "⏎ details" in _footer(app))
        assert not card.compact and "⏎ details" in _footer(app)
        app.screen.query_one(ProcessTable).focus()
        await until(pilot, lambda: "⏎ details" in _footer(app) and "f forensics" in _footer(app))
        assert "⏎ details" in _footer(app) and "f forensics" in _footer(app)


async def test_the_arrows_move_between_one_line_gpus(make_app):
    app = make_app("tp4-70b")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        cards = [app.screen.query_one(f"#gpu-{i}", GpuCard) for i in range(4)]
        assert all(card.compact for card in cards)
        cards[0].focus()
        await pilot.press("down", "down")
        assert app.focused is cards[2]
        await pilot.press("up")
        assert app.focused is cards[1]
        await pilot.press("up", "up")  # none past the first
        assert app.focused is cards[0]


async def test_the_arrows_scroll_past_full_cards(make_app):
    """Full cards (room for them all) leave the arrows to the screen: they move no focus."""
    app = make_app("tp4-70b")
    async with app.run_test(size=(120, 90)) as pilot:
        await settle(app, pilot)
        first = app.screen.query_one("#gpu-0", GpuCard)
        assert not first.compact
        first.focus()
        await pilot.press("down")
        assert app.focused is first


async def test_help_says_how_to_close_it(make_app):
    app = make_app("idle-node")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "escape, q, ? or h closes this help" in text_of(app.screen.query_one("#help-text"))
        assert "k  on a process" in text_of(app.screen.query_one("#help-text"))
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_enter_on_a_process_opens_a_readable_sheet(make_app):
    app = make_app("tp4-70b")
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(ProcessTable)
        table.focus()
        table.move_cursor(row=[table.get_row_at(i)[0].plain for i in range(table.row_count)].index("2101"))
        await pilot.press("enter")
        assert isinstance(app.screen, DetailsScreen)
        sheet = text_of(app.screen.query_one("#details-text"))
        flat = " ".join(sheet.split())
        assert "Process 2101: VLLM::Worker_TP1" in flat
        assert "user vllm" in flat and "started 2026-01-01 00:00:00 UTC" in flat
        assert "engine vllm serving meta-llama/Llama-3.1-70B at http://127.0.0.1:8000" in flat
        assert " GB on GPU 1" in flat and "gpu_memory_bytes" not in sheet  # a size with its unit, not a dump
        assert "--tensor-parallel-size 4" in flat and "'--tensor-parallel-size'" not in sheet  # one command line
        await pilot.press("g")
        assert " GiB on GPU 1" in text_of(app.screen.query_one("#details-text"))


@pytest.fixture(scope="module")
def fleet_sample():
    from gpumem_tui.demo.fleet_answers import demo_sample
    from tests.sources.prometheus.conftest import FLEET

    return demo_sample(FLEET, 120, 5, "demo: 8 simulated nodes")


def _fleet_app(fleet_sample) -> GpuMemApp:
    from gpumem_tui.cli.fleet_screen import node_opener
    from gpumem_tui.demo.fleet_answers import demo_node_feed

    async def read():
        return fleet_sample

    opener = node_opener(lambda name: demo_node_feed(name, lambda: fleet_sample), 5.0)
    return GpuMemApp.of_fleet(Fleet(read, "demo", interval_s=15, poll=False, open_node=opener))


def test_question_mark_opens_the_fleet_s_help(fleet_sample):
    seen: dict[str, object] = {}

    async def drive(pilot):
        await settle(pilot.app, pilot)
        assert "? Help" in _footer(pilot.app)
        await pilot.press("question_mark")
        seen["screen"] = pilot.app.screen
        seen["text"] = text_of(pilot.app.screen.query_one("#help-text"))
        await pilot.press("escape")
        seen["back"] = pilot.app.screen
        await pilot.press("q")

    app = _fleet_app(fleet_sample)
    app.run(headless=True, size=(120, 40), auto_pilot=drive)
    assert isinstance(seen["screen"], HelpScreen) and isinstance(seen["back"], FleetScreen)
    assert "enter  on a node: its own screen" in str(seen["text"]) and "r  read the fleet now" in str(seen["text"])
    assert "escape, q, ? or h closes this help" in str(seen["text"])


def test_the_node_screen_opened_from_the_fleet_says_q_back(fleet_sample):
    seen: dict[str, str] = {}

    async def drive(pilot):
        await settle(pilot.app, pilot)
        await pilot.press("enter")
        await settle(pilot.app, pilot)
        assert isinstance(pilot.app.screen, MainScreen)
        seen["footer"] = _footer(pilot.app)
        await pilot.press("q")
        await pilot.pause()
        seen["back"] = type(pilot.app.screen).__name__
        await pilot.press("q")

    app = _fleet_app(fleet_sample)
    app.run(headless=True, size=(120, 40), auto_pilot=drive)
    assert "q back" in seen["footer"] and "q quit" not in seen["footer"]
    assert seen["back"] == "FleetScreen" and app.return_code == 0


async def test_the_node_screen_alone_says_q_quit(make_app):
    app = make_app("idle-node")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await until(pilot, lambda: "q quit" in _footer(app))
        assert "q quit" in _footer(app) and "q back" not in _footer(app)
        await pilot.press("escape")  # nothing to go back to: the app stays
        assert app.is_running
