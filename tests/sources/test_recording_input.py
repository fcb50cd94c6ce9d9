"""A recording is outside input: damaged, oversized or foreign lines are skipped with a note and reading
goes on; a line far longer than any sample is never held whole; a session of another format version is a
clear error; only one recorder writes a file at a time; a write that fails is an error in words."""

from __future__ import annotations

import json
import os
import tracemalloc

import pytest

from gpumem_tui.demo import ManualClock, demo_collector
from gpumem_tui.sources.replay import (
    MAX_LINE_BYTES,
    MAX_WARNINGS,
    Recorder,
    RecordingError,
    RecordingReader,
    ReplaySource,
)
from tests.fuzz.hostile import header


def _samples(n: int = 3):
    clock = ManualClock()
    collector, _ = demo_collector("healthy-8b", clock=clock)
    out = []
    for t in range(n):
        clock.set(10 * t)
        out.append(collector.sample())
    return out


def _write(path, *lines: bytes) -> None:
    path.write_bytes(header().encode() + b"\n" + b"".join(line + b"\n" for line in lines))


def test_a_line_longer_than_any_sample_is_skipped_without_being_held(tmp_path):
    first, second, _ = _samples()
    path = tmp_path / "long.jsonl"
    with path.open("wb") as handle:
        handle.write(header().encode() + b"\n" + first.model_dump_json().encode() + b"\n")
        handle.write(b'{"timestamp": 1, "hostname": "' + b"x" * (4 * MAX_LINE_BYTES) + b'"}\n')
        handle.write(second.model_dump_json().encode() + b"\n")
    tracemalloc.start()
    reader = RecordingReader(path)
    samples = list(reader)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert samples == [first, second]
    assert any("line 3 is over" in w for w in reader.warnings)
    assert peak < 2.5 * MAX_LINE_BYTES, f"peak {peak / 2**20:.0f} MiB while reading a 4x longer line"


def test_invalid_utf8_is_read_as_replacement_characters_and_junk_lines_are_skipped(tmp_path):
    first, second, third = _samples()
    named = first.model_dump_json().encode().replace(b'"hostname":"', b'"hostname":"\xff\xfe')
    path = tmp_path / "bytes.jsonl"
    _write(
        path, named, b"\xff\xfe\x00 not json", second.model_dump_json().encode()[:-40], third.model_dump_json().encode()
    )
    reader = RecordingReader(path)
    samples = list(reader)
    assert [s.timestamp for s in samples] == [first.timestamp, third.timestamp]
    assert samples[0].hostname.startswith("\ufffd\ufffd")
    assert len(reader.warnings) == 2
    assert "line 3 is not a sample (Invalid JSON" in reader.warnings[0]
    assert "line 4 is not a sample (Invalid JSON" in reader.warnings[1]


def test_a_later_session_of_another_version_is_refused(tmp_path):
    first, second, _ = _samples()
    path = tmp_path / "mixed.jsonl"
    future = json.dumps({"format": "gpumem-tui-recording", "version": 99}).encode()
    _write(path, first.model_dump_json().encode(), future, second.model_dump_json().encode())
    with pytest.raises(RecordingError, match="format version 99"):
        RecordingReader(path)
    assert list(RecordingReader(path, session=1)) == [first]


def test_skipped_lines_are_named_up_to_a_limit_then_counted(tmp_path):
    first = _samples(1)[0]
    path = tmp_path / "junk.jsonl"
    _write(path, first.model_dump_json().encode(), *[b"{}" for _ in range(MAX_WARNINGS + 500)])
    reader = RecordingReader(path)
    assert list(reader) == [first]
    assert len(reader.warnings) == MAX_WARNINGS + 1 and "500 more line(s)" in reader.warnings[-1]


def test_replay_plays_on_past_a_sample_whose_timestamp_is_no_moment(tmp_path):
    first, second, third = _samples()
    broken = json.loads(second.model_dump_json())
    broken["timestamp"] = float("nan")
    path = tmp_path / "nan.jsonl"
    _write(path, first.model_dump_json().encode(), json.dumps(broken).encode(), third.model_dump_json().encode())
    clock = ManualClock()
    replay = ReplaySource(path, clock=clock)
    assert replay.sample() == first
    clock.set(third.timestamp - first.timestamp)
    assert replay.sample() == third and replay.finished
    assert "line 3 is not a sample (timestamp: Input should be a finite number)" in replay.warnings[0]


def test_a_second_recorder_on_one_file_is_refused(tmp_path):
    path = tmp_path / "one.jsonl"
    first, second, _ = _samples()
    with Recorder(path) as recorder:
        recorder.write(first)
        with pytest.raises(RecordingError, match="another gpumem-tui is recording to this file"):
            Recorder(path)
        recorder.write(second)
    with Recorder(path) as again:  # the lock goes with the recorder
        again.write(_samples()[2])
    assert len(list(RecordingReader(path))) == 3


def test_a_full_disk_is_a_recording_error_in_words(tmp_path):
    with pytest.raises(RecordingError, match="cannot write .No space left on device"):
        Recorder("/dev/full")
    path = tmp_path / "fills.jsonl"
    recorder = Recorder(path)
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, recorder._file.fileno())  # the disk fills up under a running recorder
    os.close(full)
    with pytest.raises(RecordingError, match="No space left on device"):
        recorder.write(_samples(1)[0])
    recorder.close()
