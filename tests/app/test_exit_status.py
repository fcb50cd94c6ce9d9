"""The TUI's exit status: 0 when quit, 1 with the error in one line when the app stopped on an error."""

from __future__ import annotations

import pytest

from gpumem_tui.cli.tui_cmd import exit_status
from tests.app.conftest import settle


async def test_quitting_exits_0_and_says_nothing(make_app, capsys):
    app = make_app("idle-node")
    async with app.run_test() as pilot:
        await settle(app, pilot)
        await pilot.press("q")
        await pilot.pause()
    assert exit_status(app) == 0 and capsys.readouterr().err == ""


async def test_an_error_that_stops_the_app_exits_1_with_it_in_one_line(make_app, capsys):
    app = make_app("idle-node")

    def broken() -> None:
        raise LookupError("no GPU 9 on this node\nsecond line")

    with pytest.raises(LookupError):
        async with app.run_test() as pilot:
            await settle(app, pilot)
            app.call_later(broken)
            await pilot.pause()
    assert exit_status(app) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == "gpumem-tui: the screen stopped on an error: LookupError: no GPU 9 on this node"
