"""`gpumem-tui check`: exit codes by the worst finding, the documented JSON, forensics on a replay, bad input."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.sources.mock import ManualClock, demo_collector
from gpumem_tui.sources.nvml import NvmlSource, NvmlUnavailable
from gpumem_tui.sources.replay import Recorder


@pytest.mark.parametrize(
    ("scenario", "code"),
    [("healthy-8b", 0), ("idle-node", 0), ("kv-pressure", 1), ("noisy-neighbour", 2), ("wrong-precision", 2)],
)
def test_exit_code_is_the_worst_severity(scenario, code, capsys):
    assert main(["check", "--demo", scenario]) == code
    out = capsys.readouterr().out
    assert out.startswith(f"check: simulated node '{scenario}'")


def test_json_lists_findings_with_the_documented_keys(capsys):
    assert main(["check", "--demo", "noisy-neighbour", "--at", "200", "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "gpumem-tui.check/1" and data["worst"] == "critical"
    assert data["forensics"] is None
    for finding in data["findings"]:
        assert {"severity", "code", "title", "explanation", "try_this", "gpu_index", "pid", "endpoint"} <= set(finding)
    assert {"foreign_process", "headroom_low"} <= {f["code"] for f in data["findings"]}
    [plan] = data["plans"]
    assert plan["label"] == "auto" and plan["found"] and plan["kv_cache_tokens"] > 0


def test_wrong_precision_is_checked_against_the_plan_it_was_made_with(capsys):
    assert main(["check", "--demo", "wrong-precision"]) == 2
    out = capsys.readouterr().out
    assert "against the plan it was made with (fp8)" in out and "weights_mismatch" in out


def test_a_plan_given_on_the_command_line(capsys):
    args = ["check", "--demo", "healthy-8b", "--json", "--model", "llama-3.1-8b", "--context", "131072", "--users", "8"]
    assert main(args) == 1  # a warning: 8 x 131,072 tokens do not fit the engine's pool
    data = json.loads(capsys.readouterr().out)
    assert data["plans"][0]["label"] == "manual"
    assert "context_too_long" in {f["code"] for f in data["findings"]}


def test_replay_json_carries_forensics(tmp_path, capsys):
    path = tmp_path / "rec.jsonl"
    clock = ManualClock()
    collector, _node = demo_collector("noisy-neighbour", clock=clock)
    with Recorder(path) as recorder:
        for moment in range(100, 181, 4):
            clock.set(moment)
            recorder.write(collector.sample())
    assert main(["check", "--replay", str(path), "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    forensics = data["forensics"]
    assert forensics["who_grew"][0]["pid"] == 3100
    assert forensics["timelines"][0]["gpu_index"] == 0
    assert any(m["kind"] == "process_started" and m["pid"] == 3100 for m in forensics["markers"])
    assert main(["check", "--replay", str(path), "--at", "10"]) == 0
    assert "Nothing critical was found" in capsys.readouterr().out
    assert main(["check", "--replay", str(path), "--at", "9999", "--json"]) == 2
    assert "past the end of the recording" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--at", "5"],
        ["check", "--demo", "nope"],
        ["check", "--demo", "healthy-8b", "--at", "-1"],
        ["check", "--replay", "/nonexistent/rec.jsonl"],
        ["check", "--demo", "healthy-8b", "--quantization", "fp8"],
        ["check", "--demo", "healthy-8b", "--model", "no-such-model"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("gpumem-tui: ") and captured.err.count("\n") == 1


def test_not_a_recording_is_bad_input(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_text("hello\n")
    assert main(["check", "--replay", str(path)]) == 2
    assert "not a gpumem-tui recording" in capsys.readouterr().err


def test_no_nvml_exits_3(capsys):
    try:
        NvmlSource().open()
        pytest.skip("NVML works on this machine")
    except NvmlUnavailable:
        pass
    assert main(["check"]) == 3
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
