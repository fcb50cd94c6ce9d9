"""OOM forensics on a real recording of the noisy-neighbour scenario, made with the real Recorder."""

from __future__ import annotations

import asyncio
import json

import pytest

from gpumem_tui.app.screens.forensics import _who_grew
from gpumem_tui.cli import main
from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.forensics import MAX_POINTS, STOP_EXPLAINS_S, Investigation, _thin, investigate, result
from gpumem_tui.sources.replay import Recorder, RecordingReader, Signalled

RECORD_FROM_S, RECORD_TO_S, STEP_S = 30, 150, 1


async def _record(path, start_s: int = RECORD_FROM_S) -> None:
    """Monitoring starts once the engine is up (30 s) and records every simulated second."""
    clock = ManualClock()
    feed = DemoFeed("noisy-neighbour", clock)
    try:
        with Recorder(path) as recorder:
            for moment in range(start_s, RECORD_TO_S + 1, STEP_S):
                clock.set(moment)
                recorder.write(await feed.sample())
    finally:
        await feed.aclose()


@pytest.fixture(scope="module")
def noisy_recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "noisy.jsonl"
    asyncio.run(_record(path))
    return path


@pytest.fixture(scope="module")
def from_start(tmp_path_factory):
    """Recorded from 0 s: the engine's start-up (weights, KV pool) lies inside the "who grew" window."""
    path = tmp_path_factory.mktemp("rec") / "noisy-from-start.jsonl"
    asyncio.run(_record(path, start_s=0))
    return path


def test_planned_start_up_ranks_below_the_notebook_that_was_not_planned(from_start, catalog):
    report = investigate(RecordingReader(from_start), catalog)
    notebook, engine = report.who_grew
    assert (notebook.pid, notebook.name, notebook.why) == (3100, "python3", "unexpected: not the engine's")
    assert notebook.unexpected_bytes == notebook.growth_bytes == 20 * 2**30 and notebook.expected_bytes == 0
    # the engine grew more (loading + KV pool), all of it within its plan
    assert engine.pid == 2100 and engine.growth_bytes > 2 * notebook.growth_bytes
    assert (engine.why, engine.unexpected_bytes, engine.expected_bytes) == (
        "expected (planned: loading / KV pool)",
        0,
        engine.growth_bytes,
    )


def test_the_exit_is_explained_by_what_came_before_it(from_start, catalog, capsys):
    report = investigate(RecordingReader(from_start), catalog)
    [explained] = report.exits
    assert explained.code == "engine_exited" and explained.endpoint == "http://127.0.0.1:8000"
    assert explained.title == (
        "engine exited on GPU 0 (OOM?): python3 pid 3100 grew +20.00 GiB just before (Llama-3.1-8B-Instruct :8000)"
    )
    assert explained.explanation.startswith(
        "Its processes were last seen holding GPU memory at 2026-01-01 00:00:56 UTC and were gone at "
        "2026-01-01 00:00:57 UTC. Free memory on GPU 0 fell to"
    )
    assert "critical other process on GPU 0: python3 pid 3100 holds 20.00 GiB beside the engine" in (
        explained.explanation
    )
    assert "Engine: meta-llama/Llama-3.1-8B-Instruct at http://127.0.0.1:8000 on GPU 0." in explained.explanation
    capsys.readouterr()
    assert main(["check", "--replay", str(from_start), "--json"]) == 2
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert findings[0] == explained.model_dump(mode="json")
    # before the exit there is nothing to explain
    assert main(["check", "--replay", str(from_start), "--at", "50", "--json"]) == 2
    assert "engine_exited" not in {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}


def test_a_walk_that_keeps_a_minute_stays_a_minute(from_start, catalog):
    walk = Investigation(catalog, None, Thresholds(), keep_s=60)
    for sample in RecordingReader(from_start):
        walk.add(sample)
        newest = sample.timestamp
        assert newest - walk.history.first_timestamp <= 60 and len(walk.history.timestamps) <= 60 // STEP_S + 1
        assert all(newest - t <= 60 for s in walk.history.process_points.values() for t, _ in s)
        assert set(walk.names) <= set(walk.history.process_points)
        assert all(m.offset_s >= walk.history.first_timestamp - walk.start for m in walk.markers)
    # the engine exited more than a minute ago, and its explanation is still there
    assert [f.code for f in walk.findings[:1]] == ["engine_exited"]
    # its critical onset fell out of the minute: the forensics say so rather than "nothing critical"
    found = result(walk)
    assert found.exits and found.first_critical is None and found.critical_forgotten
    said = str(_who_grew(found, "bold red", "GiB"))
    assert "fell out of the" in said and "Nothing critical" not in said


def test_the_notebook_grew_before_the_first_critical_finding(noisy_recording, catalog):
    report = investigate(RecordingReader(noisy_recording), catalog)
    assert report.first_critical is not None and report.first_critical.severity == "critical"
    # the notebook starts at 42 s and ramps over 5 s: critical before it is done (recording began at 30 s)
    assert 12 <= report.first_critical_offset_s <= 17
    top = report.who_grew[0]
    assert (top.pid, top.name, top.start_bytes) == (3100, "python3", 0)
    assert top.growth_bytes > 10 * 2**30
    assert all(g.growth_bytes < top.growth_bytes / 10 for g in report.who_grew[1:])


def test_the_engine_exit_is_marked_as_out_of_memory(noisy_recording, catalog):
    report = investigate(RecordingReader(noisy_recording), catalog)
    [exit_marker] = [m for m in report.markers if m.kind == "process_exited"]
    assert exit_marker.pid == 2100 and "likely out of memory" in exit_marker.text
    assert 26 <= exit_marker.offset_s <= 28  # the OOM at about 57 s of the scenario
    started = [m for m in report.markers if m.kind == "process_started"]
    assert [m.pid for m in started] == [3100]
    raised = {(m.code, m.severity) for m in report.markers if m.kind == "finding"}
    assert {("foreign_process", "warning"), ("headroom_low", "critical"), ("engine_down", "critical")} <= raised


def test_timeline_per_gpu_and_cut_off_at(noisy_recording, catalog):
    report = investigate(RecordingReader(noisy_recording), catalog, until_s=10)
    [timeline] = report.timelines
    assert timeline.gpu_index == 0 and timeline.points[0][0] == 0 and timeline.points[-1][0] <= 10
    assert report.first_critical is None and report.who_grew == []


def test_thinning_keeps_the_peak():
    points = [(float(t), 100) for t in range(5000)]
    points[4321] = (4321.0, 999)
    thin = _thin(points)
    assert len(thin) <= MAX_POINTS and (4321.0, 999) in thin


def test_check_on_the_simulated_node_after_the_exit_names_the_cause(capsys):
    assert main(["check", "--demo", "noisy-neighbour", "--at", "120", "--json"]) == 2
    first = json.loads(capsys.readouterr().out)["findings"][0]
    assert first["code"] == "engine_exited" and first["pid"] == 3100
    assert "python3 pid 3100 grew +20.00 GiB just before" in first["title"]


def test_the_exit_is_placed_between_the_last_sample_alive_and_the_first_gone(capsys):
    """check samples every 5 s: the explanation names the interval the exit fell in, not the sample that saw it."""
    assert main(["check", "--demo", "noisy-neighbour", "--at", "300"]) == 2
    assert "at 2026-01-01 00:00:55 UTC and were gone at 2026-01-01 00:01:00 UTC." in capsys.readouterr().out


@pytest.mark.parametrize(("before_s", "stopped"), [(3, True), (STOP_EXPLAINS_S + 30, False)])
def test_a_signal_explains_only_an_exit_soon_after_it(noisy_recording, catalog, before_s, stopped):
    """`k` sent SIGTERM to the engine, which outlived it ('running'): its exit a minute and more later is its
    own (here the notebook's OOM), not the signal's; an exit just after the signal is the signal's."""
    samples = list(RecordingReader(noisy_recording))
    gone = next(s for s in samples if not any(p.pid == 2100 for p in s.processes))
    walk = Investigation(catalog, None, Thresholds())
    sent = Signalled(event="signal", timestamp=gone.timestamp - before_s, pid=2100, signal="SIGTERM",
                     outcome="running", said="pid 2100 is still running 5 s after SIGTERM")  # fmt: skip
    walk.signalled(sent, "by you from this screen")
    for sample in samples:
        walk.add(sample)
    [exited] = [f for f in walk.findings if f.code == "engine_exited"]
    [marker] = [m for m in walk.markers if m.kind == "process_exited"]
    assert ("stopped by you" in exited.title) is stopped and ("stopped by you" in marker.text) is stopped
    assert exited.severity == ("warning" if stopped else "critical")
    assert ("likely out of memory" in marker.text) is not stopped
