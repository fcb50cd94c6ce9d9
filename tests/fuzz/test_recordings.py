"""Recordings from outside: every text field hostile, hostile numbers, broken lines. `snapshot --replay`,
`check --replay` (text, -v and --json) and the ReplayFeed end cleanly: a documented exit, no traceback, no
raw escape byte, strict JSON; markup is shown as written."""

from __future__ import annotations

import asyncio
import copy
import json
import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpumem_tui.sources.feed import ReplayFeed
from gpumem_tui.sources.replay import RecordingError, RecordingReader, ReplaySource
from tests.app.conftest import record_demo
from tests.fuzz.conftest import assert_clean, run_cli
from tests.fuzz.hostile import ESCAPES, assert_no_raw_escape, header, hostile_sample, leaves, put, write_recording

COMMANDS = [
    ["snapshot", "--replay"],
    ["snapshot", "--json", "--replay"],
    ["check", "--replay"],
    ["check", "-v", "--replay"],
    ["check", "--json", "--replay"],
]


@pytest.fixture(scope="module")
def demo_recording(tmp_path_factory):
    import asyncio

    path = tmp_path_factory.mktemp("rec") / "noisy.jsonl"
    asyncio.run(record_demo(path, "noisy-neighbour", range(30, 300, 30)))
    return path


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_text_field_is_shown_literally(capsys, tmp_path, demo_recording, command):
    hostile = write_recording(tmp_path / "hostile.jsonl", [hostile_sample(s) for s in RecordingReader(demo_recording)])
    code, out, err = run_cli(capsys, [*command, str(hostile)])
    assert_clean(code, out, err, json_out="--json" in command)
    assert code in (0, 1, 2)
    if "--json" not in command:
        assert "\\x1b]0;pwned" in out and "[bold]marked[/bold]" in out, "shown as written, escapes visible"


# Generated recordings: a real demo recording, then hostile numbers, text, types and damaged lines.

NUMBERS = st.sampled_from(
    [math.nan, math.inf, -math.inf, -1, -1.5, -(2**63), 2**64, 2**70, 10**30, 1e300, -1e300, 0, 0.0, 1.5, 5.0, 50]
)
TEXT = st.one_of(
    st.sampled_from(list(ESCAPES)),
    st.text(
        alphabet=st.sampled_from(
            ["\x1b", "\x9b", "\x07", "\r", "\n", "\x00", "[", "]", "/", "|", "\u202e", "\ufffd", " ", "x", "é"]
        ),
        max_size=30,
    ),
)
CONFUSED = st.sampled_from([None, [], {}, "12", True, [1, 2], {"a": 1}])
CAPTURED = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
"""capsys and tmp_path are shared by a test's examples: each run reads its own output, each file is rewritten."""
WORD = re.compile(r"\b(nan|inf|infinity)\b", re.IGNORECASE)


@st.composite
def recordings(draw, base: list[dict]) -> bytes:
    samples = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 6))):
        sample = draw(st.sampled_from(samples))
        path, old = draw(st.sampled_from(list(leaves(sample))))
        if isinstance(old, (int, float)) and not isinstance(old, bool):
            value = draw(st.one_of(NUMBERS, CONFUSED))
        elif isinstance(old, str):
            value = draw(st.one_of(TEXT, CONFUSED))
        else:
            value = draw(st.one_of(NUMBERS, TEXT, CONFUSED))
        put(sample, path, copy.deepcopy(value))  # never one object in two places
    if draw(st.booleans()):  # a GPU reported twice
        sample = draw(st.sampled_from(samples))
        if sample["gpus"]:
            sample["gpus"].append(copy.deepcopy(sample["gpus"][0]))
    lines = [json.dumps(s).encode() for s in samples]
    for _ in range(draw(st.integers(0, 2))):  # damaged lines: cut short, or junk bytes
        k = draw(st.integers(0, len(lines) - 1))
        cut = lines[k][: draw(st.integers(0, len(lines[k])))]
        lines[k] = cut if draw(st.booleans()) else draw(st.binary(max_size=60))
    return header().encode() + b"\n" + b"\n".join(lines) + b"\n"


@pytest.fixture(scope="module")
def base_samples(demo_recording):
    return [json.loads(s.model_dump_json()) for s in RecordingReader(demo_recording)]


def _fuzz_command(capsys, tmp_path, data, base, command):
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data.draw(recordings(base)))
    code, out, err = run_cli(capsys, [*command, str(path)])
    assert_clean(code, out, err, json_out="--json" in command)
    if "--json" not in command:
        assert not WORD.search(out), WORD.search(out)
    return code


@CAPTURED
@given(data=st.data())
def test_fuzz_snapshot_replay(capsys, tmp_path, base_samples, data):
    _fuzz_command(capsys, tmp_path, data, base_samples, ["snapshot", "--replay"])


@CAPTURED
@given(data=st.data())
def test_fuzz_snapshot_replay_json(capsys, tmp_path, base_samples, data):
    _fuzz_command(capsys, tmp_path, data, base_samples, ["snapshot", "--json", "--replay"])


@CAPTURED
@given(data=st.data())
def test_fuzz_check_replay(capsys, tmp_path, base_samples, data):
    _fuzz_command(capsys, tmp_path, data, base_samples, ["check", "-v", "--replay"])


@CAPTURED
@given(data=st.data())
def test_fuzz_check_replay_json(capsys, tmp_path, base_samples, data):
    _fuzz_command(capsys, tmp_path, data, base_samples, ["check", "--json", "--replay"])


@CAPTURED
@given(data=st.data())
def test_fuzz_replay_feed_plays_every_generated_recording(tmp_path, base_samples, data):
    """The TUI's feed: every position of a generated recording gives a sample or a clear RecordingError."""
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data.draw(recordings(base_samples)))
    clock = [0.0]
    try:
        feed = ReplayFeed(ReplaySource(path, clock=lambda: clock[0]), "fuzz.jsonl")
    except RecordingError:
        return
    for clock[0] in (0.0, 30.0, 100.0, 1e6):
        sample = asyncio.run(feed.sample())
        assert math.isfinite(sample.timestamp) and len({g.index for g in sample.gpus}) == len(sample.gpus)
        assert_no_raw_escape(json.dumps(sample.model_dump(mode="json"), allow_nan=False, ensure_ascii=True))
