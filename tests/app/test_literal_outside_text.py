"""A recording whose every text field carries terminal escapes and markup: every screen of the TUI shows
them as visible escapes, literally, and no escape byte reaches what the terminal is sent."""

from __future__ import annotations

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.sources.feed import ReplayFeed
from gpumem_tui.sources.replay import ReplaySource
from tests.app.conftest import record_demo, settle
from tests.app.screen_text import screen_text
from tests.fuzz.hostile import assert_no_raw_escape, hostile_sample, write_recording


async def _hostile_recording(tmp_path):
    from gpumem_tui.sources.replay import RecordingReader

    plain = tmp_path / "plain.jsonl"
    await record_demo(plain, "noisy-neighbour", range(30, 300, 30))
    return write_recording(tmp_path / "hostile.jsonl", [hostile_sample(s) for s in RecordingReader(plain)])


def _shown(app) -> str:
    return "\n".join(screen_text(app))


async def test_no_escape_from_a_hostile_recording_reaches_any_screen(catalog, tmp_path):
    path = await _hostile_recording(tmp_path)
    feed = ReplayFeed(ReplaySource(path, clock=lambda: 0.0, start_at=1e9), str(path))
    app = GpuMemApp(feed, Judge(catalog), poll=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(app, pilot)
        main = _shown(app)
        assert_no_raw_escape(main)
        assert "\\x1b]0;pwned" in main, "the hostile name is shown, as visible escapes"
        assert "[bold]marked" in main, "markup in a name is shown, not applied"
        await pilot.press("enter")
        await pilot.pause()
        assert_no_raw_escape(_shown(app))
        await pilot.press("escape")
        await pilot.press("f")
        await app.screen.workers.wait_for_complete()
        await pilot.pause()
        assert_no_raw_escape(_shown(app))
        assert app.is_running
