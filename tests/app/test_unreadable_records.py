"""A recording with readings no driver or engine can give (a GPU index twice, NaN, negative memory, a
timestamp that is no moment): the TUI keeps running, shows those readings as missing, says what it dropped,
and plays on past a sample it had to skip."""

from __future__ import annotations

import json
import re

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.demo import ManualClock
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.sources.feed import ReplayFeed
from gpumem_tui.sources.replay import RecordingReader, ReplaySource
from tests.app.conftest import record_demo, settle
from tests.app.screen_text import screen_text
from tests.fuzz.hostile import header


async def _broken(tmp_path) -> tuple:
    plain = tmp_path / "plain.jsonl"
    await record_demo(plain, "busy-node", [100, 110, 120])
    first, second, third = (json.loads(s.model_dump_json()) for s in RecordingReader(plain))
    first["gpus"][1]["index"] = first["gpus"][0]["index"]  # reported twice
    first["gpus"][0]["memory_used_bytes"] = -5 * 2**30
    first["gpus"][0]["power_w"] = float("nan")
    first["engines"][0]["records"][0]["kv_usage_fraction"] = float("nan")
    second["timestamp"] = float("nan")
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join([header(), *(json.dumps(s) for s in (first, second, third))]) + "\n")
    return path, third["timestamp"] - first["timestamp"]


async def test_unreadable_values_are_dropped_and_said_and_replay_goes_on(catalog, tmp_path):
    path, span = await _broken(tmp_path)
    clock = ManualClock(0)
    app = GpuMemApp(ReplayFeed(ReplaySource(path, clock=clock), str(path)), Judge(catalog), poll=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(app, pilot)
        assert app.is_running
        shown = "\n".join(screen_text(app))
        assert [g.index for g in app.node.sample.gpus].count(0) == 1
        assert "GPU 0 was reported twice" in shown
        assert "memory_used_bytes negative" in shown and app.node.sample.gpus[0].memory_used_bytes is None
        assert not re.search(r"\bnan\b", shown, re.IGNORECASE)
        clock.set(span)
        app.node_screen.refresh_now()
        await settle(app, pilot)
        assert app.is_running and app.node.sample.timestamp > 0
        shown = "\n".join(screen_text(app))
        assert "line 3 is not a sample (timestamp" in shown, "the skipped sample is said on screen"
