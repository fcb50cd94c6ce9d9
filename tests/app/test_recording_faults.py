"""The TUI recording onto a disk that fills up: the write fails in the real OS (ENOSPC from /dev/full under
the recorder's own file descriptor); the app says so, stops recording and goes on."""

from __future__ import annotations

import os

from gpumem_tui.sources.replay import Recorder
from tests.app.conftest import refresh, settle


async def test_a_disk_that_fills_up_stops_the_recording_not_the_app(make_app, tmp_path):
    app = make_app("healthy-8b", at=100)
    async with app.run_test() as pilot:
        await settle(app, pilot)
        app.node.recorder = Recorder(tmp_path / "rec.jsonl")
        full = os.open("/dev/full", os.O_WRONLY)
        os.dup2(full, app.node.recorder._file.fileno())
        os.close(full)
        app.demo_clock.set(110)
        await refresh(app, pilot)
        assert app.node.recorder is None and app.is_running
        said = [n.message for n in app._notifications]
        assert any("recording stopped" in m and "No space left on device" in m for m in said), said
        app.demo_clock.set(120)
        await refresh(app, pilot)
        assert app.is_running and app.node.sample.timestamp == app.demo_feed.node.timestamp
