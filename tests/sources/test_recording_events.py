"""A signal sent from the screen is a line of its own in the recording (`Signalled`): read back as an event,
never as a damaged sample, in the session of the samples around it; a recording without events reads as before."""

from __future__ import annotations

import json

from gpumem_tui.models import Sample
from gpumem_tui.sources.replay import Recorder, RecordingReader, ReplaySource, Signalled

T0 = 1_767_225_600.0


def _sample(t: float, host: str = "gpu-node-04") -> Sample:
    return Sample(timestamp=t, hostname=host, source="demo:noisy-neighbour")


def _event(t: float, outcome: str = "ended") -> Signalled:
    return Signalled(
        event="signal", timestamp=t, pid=3100, signal="SIGTERM", outcome=outcome, said="pid 3100 ended after SIGTERM"
    )


def test_an_event_reads_back_between_its_samples(tmp_path):
    path = tmp_path / "r.jsonl"
    with Recorder(path) as recorder:
        recorder.write(_sample(T0))
        recorder.note(_event(T0 + 1))
        recorder.write(_sample(T0 + 2))
    reader = RecordingReader(path)
    assert [s.timestamp for s in reader] == [T0, T0 + 2]
    assert reader.warnings == [] and reader.events == [_event(T0 + 1)]


def test_an_event_said_before_a_new_session_s_first_sample_goes_after_it(tmp_path):
    """Appending from another node opens a session at its first sample: an event said before that sample
    belongs to the new session, not to the end of the old one."""
    path = tmp_path / "r.jsonl"
    with Recorder(path) as recorder:
        recorder.write(_sample(T0))
    with Recorder(path) as recorder:
        recorder.note(_event(T0 + 5))
        recorder.write(_sample(T0 + 6, host="other-node"))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [next(iter(line)) for line in lines] == ["format", "timestamp", "format", "timestamp", "event"]
    assert RecordingReader(path).sessions == 2
    reader = RecordingReader(path)
    list(reader)
    assert [e.timestamp for e in reader.events] == [T0 + 5]


def test_a_recording_ending_in_an_event_carries_on_from_its_last_sample(tmp_path):
    path = tmp_path / "r.jsonl"
    with Recorder(path) as recorder:
        recorder.write(_sample(T0))
        recorder.note(_event(T0 + 1))
    with Recorder(path) as recorder:
        recorder.write(_sample(T0 + 2))
    assert RecordingReader(path).sessions == 1  # the same node, later: one session
    source = ReplaySource(path, clock=lambda: 0.0, start_at=1e9)
    assert source.sample().timestamp == T0 + 2 and source.warnings == []
