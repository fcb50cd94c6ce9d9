"""OOM forensics on a real recording of the noisy-neighbour scenario, made with the real Recorder."""

from __future__ import annotations

import asyncio

import pytest

from gpumem_tui.forensics import MAX_POINTS, _thin, investigate
from gpumem_tui.sources.feed import DemoFeed
from gpumem_tui.sources.mock import ManualClock
from gpumem_tui.sources.replay import Recorder, RecordingReader

RECORD_FROM_S, RECORD_TO_S, STEP_S = 30, 330, 3


async def _record(path) -> None:
    """Monitoring starts once the engine is up (30 s) and records every 3 simulated seconds."""
    clock = ManualClock()
    feed = DemoFeed("noisy-neighbour", clock)
    try:
        with Recorder(path) as recorder:
            for moment in range(RECORD_FROM_S, RECORD_TO_S + 1, STEP_S):
                clock.set(moment)
                recorder.write(await feed.sample())
    finally:
        await feed.aclose()


@pytest.fixture(scope="module")
def noisy_recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "noisy.jsonl"
    asyncio.run(_record(path))
    return path


def test_the_notebook_grew_before_the_first_critical_finding(noisy_recording, catalog):
    report = investigate(RecordingReader(noisy_recording), catalog)
    assert report.first_critical is not None and report.first_critical.severity == "critical"
    # the notebook starts at 120 s and ramps over 15 s: critical before it is done (recording began at 30 s)
    assert 90 <= report.first_critical_offset_s <= 105
    top = report.who_grew[0]
    assert (top.pid, top.name, top.start_bytes) == (3100, "python3", 0)
    assert top.growth_bytes > 10 * 2**30
    assert all(g.growth_bytes < top.growth_bytes / 10 for g in report.who_grew[1:])


def test_the_engine_exit_is_marked_as_out_of_memory(noisy_recording, catalog):
    report = investigate(RecordingReader(noisy_recording), catalog)
    [exit_marker] = [m for m in report.markers if m.kind == "process_exited"]
    assert exit_marker.pid == 2100 and "likely out of memory" in exit_marker.text
    assert 230 <= exit_marker.offset_s <= 240  # the OOM at about 266 s of the scenario
    started = [m for m in report.markers if m.kind == "process_started"]
    assert [m.pid for m in started] == [3100]
    raised = {(m.code, m.severity) for m in report.markers if m.kind == "finding"}
    assert {("foreign_process", "warning"), ("headroom_low", "critical"), ("engine_down", "critical")} <= raised


def test_timeline_per_gpu_and_cut_off_at(noisy_recording, catalog):
    report = investigate(RecordingReader(noisy_recording), catalog, until_s=60)
    [timeline] = report.timelines
    assert timeline.gpu_index == 0 and timeline.points[0][0] == 0 and timeline.points[-1][0] <= 60
    assert report.first_critical is None and report.who_grew == []


def test_thinning_keeps_the_peak():
    points = [(float(t), 100) for t in range(5000)]
    points[4321] = (4321.0, 999)
    thin = _thin(points)
    assert len(thin) <= MAX_POINTS and (4321.0, 999) in thin
