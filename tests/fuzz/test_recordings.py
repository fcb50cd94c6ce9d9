"""Recordings from outside: every text field hostile, hostile numbers, broken lines. `snapshot --replay`,
`check --replay` (text, -v and --json) and the ReplayFeed end cleanly: a documented exit, no traceback, no
raw escape byte, strict JSON; markup is shown as written."""

from __future__ import annotations

import pytest

from gpumem_tui.sources.replay import RecordingReader
from tests.app.conftest import record_demo
from tests.fuzz.conftest import assert_clean, run_cli
from tests.fuzz.hostile import hostile_sample, write_recording

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
