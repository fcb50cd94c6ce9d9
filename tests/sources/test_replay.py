"""Recordings: round trip, replay at any speed, a cut-off last line, another format version."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.demo import ManualClock, demo_collector
from gpumem_tui.sources.replay import Recorder, RecordingError, RecordingReader, ReplaySource


def record(path, seconds=(0, 10, 20, 30, 40), scenario="kv-pressure"):
    clock = ManualClock()
    collector, _ = demo_collector(scenario, clock=clock)
    samples = []
    with Recorder(path) as recorder:
        for t in seconds:
            clock.set(t)
            samples.append(collector.sample())
            recorder.write(samples[-1])
    return samples


def test_round_trip(tmp_path):
    path = tmp_path / "run.jsonl"
    samples = record(path)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["format"] == "gpumem-tui-recording" and len(lines) == 6
    reader = RecordingReader(path)
    assert list(reader) == samples and reader.warnings == []


def test_appending_keeps_one_header(tmp_path):
    path = tmp_path / "run.jsonl"
    record(path, (0, 10))
    record(path, (20,))
    assert len(list(RecordingReader(path))) == 3
    assert sum('"format"' in line for line in path.read_text().splitlines()) == 1


def test_replay_at_ten_times_speed(tmp_path):
    path = tmp_path / "run.jsonl"
    samples = record(path)
    clock = ManualClock()
    replay = ReplaySource(path, clock=clock, speed=10)
    assert replay.sample() == samples[0]
    clock.set(1.5)  # 15 s into the recording
    assert replay.sample() == samples[1] and not replay.finished
    clock.set(9)
    assert replay.sample() == samples[-1] and replay.finished


def test_the_header_stops_at_the_recordings_end(tmp_path):
    """Before: the screen's header counted on past the last sample (`replay run.jsonl at 37 s` over a recording
    of 20 s), as if the file held more."""
    from gpumem_tui.sources.feed import ReplayFeed

    path = tmp_path / "run.jsonl"
    samples = record(path, (0, 10, 20))
    clock = ManualClock()
    feed = ReplayFeed(ReplaySource(path, clock=clock), "run.jsonl")
    clock.set(15)
    assert feed.replay.sample() == samples[1] and feed.label == "replay run.jsonl at 15 s"
    clock.set(37)
    assert feed.replay.sample() == samples[-1] and feed.label == "replay run.jsonl at 20 s, its end"


def test_a_cut_off_last_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "run.jsonl"
    samples = record(path)
    with path.open("a") as handle:
        handle.write(samples[0].model_dump_json()[:200])
    reader = RecordingReader(path)
    assert list(reader) == samples
    assert len(reader.warnings) == 1 and "cut off" in reader.warnings[0]
    record(path, (50,))  # the next recording seals the broken line and goes on
    reader = RecordingReader(path)
    assert len(list(reader)) == 6 and len(reader.warnings) == 1


def test_another_format_version_is_a_clear_error(tmp_path):
    path = tmp_path / "future.jsonl"
    path.write_text(json.dumps({"format": "gpumem-tui-recording", "version": 2}) + "\n")
    with pytest.raises(RecordingError, match="format version 2.*reads version 1"):
        RecordingReader(path)
    with pytest.raises(RecordingError):
        Recorder(path)
    assert path.read_text().count("\n") == 1  # nothing appended to a file we cannot read


@pytest.mark.parametrize(
    "content, words",
    [
        ("hello\n", "not a gpumem-tui recording"),
        ('{"format": "gpumem-tui-recording", "version": 1}\n', "holds no samples"),
    ],
)
def test_files_that_are_not_usable_recordings(tmp_path, content, words):
    path = tmp_path / "x.jsonl"
    path.write_text(content)
    with pytest.raises(RecordingError, match=words):
        ReplaySource(path)


def test_a_missing_file(tmp_path):
    with pytest.raises(RecordingError, match="cannot read"):
        RecordingReader(tmp_path / "absent.jsonl")


def test_an_unrelated_session_appended_is_read_apart(tmp_path):
    """A second incident recorded into the same file (time starts again) is a new session: the reader
    reads the last one unless told which, and says the file holds more."""
    path = tmp_path / "run.jsonl"
    record(path, (0, 10, 20))
    later = record(path, (5,))  # the clock went back: another run
    reader = RecordingReader(path)
    assert list(reader) == later and reader.sessions == 2 and "2 recording sessions" in reader.warnings[0]
    assert len(list(RecordingReader(path, session=1))) == 3
    with pytest.raises(RecordingError, match="no session 3"):
        RecordingReader(path, session=3)


def test_a_gpu_this_process_may_not_open_replays_the_same(tmp_path):
    path = tmp_path / "run.jsonl"
    samples = record(path, (90, 100), scenario="slurm-denied")
    assert [g.accessible for g in samples[-1].gpus] == [True, True, False, False]
    assert list(RecordingReader(path)) == samples
