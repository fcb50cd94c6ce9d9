"""`gpumem-tui check` as a monitoring plugin: exit codes by the worst finding (3 for every failure), the
status line and its perfdata, piped text, the documented JSON, forensics on a replay."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpumem_tui.cli import check_status, main
from gpumem_tui.demo import ManualClock, demo_collector
from gpumem_tui.sources.nvml import NvmlSource, NvmlUnavailable
from gpumem_tui.sources.replay import Recorder

STATUS_LINE = re.compile(r"^(OK|WARNING|CRITICAL|UNKNOWN) - (.+?)(?: \| (.*))?$")
PERFDATA = re.compile(r"^[^=' |]+=(U|-?[0-9.]+B);[0-9.]*;[0-9.]*;[0-9.]*;[0-9.]*$")
"""label=value[UOM];warn;crit;min;max, as the Nagios plugin guidelines write it (UOM B: bytes)."""


@pytest.mark.parametrize(
    ("scenario", "at", "code", "status"),
    [
        ("healthy-8b", "300", 0, "OK"),
        ("idle-node", "60", 0, "OK"),
        ("kv-pressure", "300", 1, "WARNING"),
        ("noisy-neighbour", "48", 2, "CRITICAL"),
        ("wrong-precision", "300", 2, "CRITICAL"),
    ],
)
def test_exit_code_and_status_line_say_the_worst_severity(scenario, at, code, status, capsys):
    assert main(["check", "--demo", scenario, "--at", at]) == code
    first, second, *_ = capsys.readouterr().out.splitlines()
    assert STATUS_LINE.match(first).group(1) == status
    assert second.startswith(f"check: simulated node '{scenario}' at {at} s")


def test_status_line_names_the_worst_finding_then_counts_the_others(capsys):
    assert main(["check", "--demo", "noisy-neighbour", "--at", "48", "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    criticals = [f for f in data["findings"] if f["severity"] == "critical"]
    warnings = [f for f in data["findings"] if f["severity"] == "warning"]
    assert len(criticals) >= 2
    # of the critical findings, the one naming a process: the notebook, not the low headroom it caused
    assert data["headline"]["pid"] == 3100 and data["headline"]["code"] == "foreign_process"
    assert main(["check", "--demo", "noisy-neighbour", "--at", "48"]) == 2
    out = capsys.readouterr().out
    status, summary, _perf = STATUS_LINE.match(out.splitlines()[0]).groups()
    counts = f"{len(criticals) - 1} critical" + (f", {len(warnings)} warning" if warnings else "")
    # what broke first (the headline's title), then how many more need a look
    assert status == "CRITICAL" and summary == f"{data['headline']['title']}; also {counts}"
    # the findings follow (after the line naming each GPU's bus id), the headline first, each with its
    # numbers and what to try
    assert out.splitlines()[2].startswith("GPUs: 0 18:00.0")
    assert out.splitlines()[3].split() == ["CRITICAL", "foreign_process", *data["headline"]["title"].split()]
    for finding in data["findings"]:
        assert f"          {finding['explanation']}\n" in out and f"try: {finding['try_this']}" in out


def test_one_finding_is_the_whole_summary(capsys):
    assert main(["check", "--demo", "kv-pressure", "--at", "300", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [f["severity"] for f in data["findings"]].count("warning") == 1
    assert data["status_line"].startswith(f"WARNING - {data['headline']['title']} | ")


def test_no_findings_on_an_idle_node_says_so_without_claiming_a_plan(capsys):
    assert main(["check", "--demo", "idle-node", "--at", "60"]) == 0
    assert capsys.readouterr().out.startswith(
        "OK - Nothing needs a look; no plan was compared (no engine runs, and none was given with --model)."
        " | gpu0_used=0B;;;0;"
    )


def test_perfdata_is_memory_used_per_gpu_in_bytes(capsys):
    assert main(["snapshot", "--demo", "noisy-neighbour", "--at", "48", "--json"]) == 0
    gpus = json.loads(capsys.readouterr().out)["gpus"]
    assert main(["check", "--demo", "noisy-neighbour", "--at", "48"]) == 2
    perf = STATUS_LINE.match(capsys.readouterr().out.splitlines()[0]).group(3).split(" ")
    assert all(PERFDATA.match(item) for item in perf), perf
    assert perf == [f"gpu{g['index']}_used={g['memory_used_bytes']}B;;;0;{g['memory_total_bytes']}" for g in gpus]


def test_a_lost_gpu_is_unknown_in_perfdata(capsys):
    assert main(["check", "--demo", "gpu-lost", "--at", "300"]) == 2
    perf = STATUS_LINE.match(capsys.readouterr().out.splitlines()[0]).group(3).split(" ")
    assert all(PERFDATA.match(item) for item in perf), perf
    assert "gpu2_used=U;;;0;" in perf


def test_plan_details_only_with_verbose(capsys):
    assert main(["check", "--demo", "noisy-neighbour", "--at", "48"]) == 2
    assert "auto plan for" not in capsys.readouterr().out
    assert main(["check", "--demo", "noisy-neighbour", "--at", "48", "--verbose"]) == 2
    out = capsys.readouterr().out
    assert "auto plan for http://127.0.0.1:8000" in out and "  found:   model " in out


@pytest.mark.parametrize("extra", [[], ["--verbose"]])
def test_piped_output_has_no_padding_and_no_wrapping(extra, capsys):
    assert main(["check", "--demo", "noisy-neighbour", "--at", "48", "--json"]) == 2
    longest = max((f["explanation"] for f in json.loads(capsys.readouterr().out)["findings"]), key=len)
    assert len(longest) > 160  # a command line: longer than any terminal the old output wrapped at
    assert main(["check", "--demo", "noisy-neighbour", "--at", "48", *extra]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line != line.rstrip()] == []
    assert " " * 10 + longest in lines


def test_json_lists_findings_with_the_documented_keys(capsys):
    assert main(["check", "--demo", "noisy-neighbour", "--at", "48", "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "gpumem-tui.check/1" and data["worst"] == "critical"
    assert data["forensics"]["first_critical_offset_s"] == 8.0  # a demo walks its minutes (from 40 s) as a replay does
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
        for moment in range(30, 50):  # serving from 30 s; the notebook grows from 42 s to 47 s
            clock.set(moment)
            recorder.write(collector.sample())
    assert main(["check", "--replay", str(path), "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    forensics = data["forensics"]
    assert forensics["who_grew"][0]["pid"] == 3100
    assert forensics["timelines"][0]["gpu_index"] == 0
    assert any(m["kind"] == "process_started" and m["pid"] == 3100 for m in forensics["markers"])
    assert main(["check", "--replay", str(path), "--at", "10", "--verbose"]) == 0
    assert "Nothing critical was found" in capsys.readouterr().out
    assert main(["check", "--replay", str(path), "--at", "9999", "--json"]) == 2
    assert "past the end of the recording" in capsys.readouterr().err
    assert main(["check", "--replay", str(path)]) == 2
    assert "Who grew" not in capsys.readouterr().out
    assert main(["check", "--replay", str(path), "--verbose"]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("Who grew") for line in lines)
    assert [line for line in lines if line != line.rstrip()] == []  # tables are not padded to the width


def test_outside_text_in_the_status_line_cannot_break_it(tmp_path, capsys):
    path = tmp_path / "rec.jsonl"
    clock = ManualClock()
    collector, _node = demo_collector("noisy-neighbour", clock=clock)
    name = "evil|name\nOK - \x1b[32m"
    with Recorder(path) as recorder:
        for moment in range(47, 50):  # the notebook's 20 GiB beside the engine
            clock.set(moment)
            sample = collector.sample()
            processes = [p.model_copy(update={"name": name}) if p.pid == 3100 else p for p in sample.processes]
            recorder.write(sample.model_copy(update={"processes": processes}))
    assert main(["check", "--replay", str(path)]) == 2
    first, *rest = capsys.readouterr().out.splitlines()
    assert first.startswith("CRITICAL - ") and "evil\N{BROKEN BAR}name\\nOK - \\x1b[32m" in first
    assert first.count("|") == 1 and not any(ch in first for ch in "\n\x1b")  # one `|`: the perfdata's
    assert not any("|" in line for line in rest)  # a monitor reads any later `|` as perfdata too


def _one_line_unknown(code, capsys) -> str:
    assert code == check_status.UNKNOWN
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("gpumem-tui: ") and captured.err.count("\n") == 1
    return captured.err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["check", "--bogus"], "check: unknown option --bogus"),
        (["check", "--demo", "healthy-8b", "-x", "1"], "check: unknown option -x"),
        (["check", "--demo", "healthy-8b", "--at", "soon"], "check: argument --at: 'soon' is not a number"),
        (["check", "--demo", "--replay", "r.jsonl"], "check: argument --replay: not allowed with argument --demo"),
        (["check", "--at", "5"], "--at needs --demo, --replay or --prometheus"),
        (["check", "--demo", "nope"], "unknown scenario 'nope'"),
        (["check", "--demo", "healthy-8b", "--at", "-1"], "-1"),
        (["check", "--demo", "healthy-8b", "--at", "99999"], "lasts 600 s"),
        (["check", "--demo", "healthy-8b", "--endpoint", "http://127.0.0.1:8000"], "--endpoint is for live engines"),
        (["check", "--replay", "/nonexistent/rec.jsonl"], "/nonexistent/rec.jsonl: cannot read"),
        (["check", "--demo", "healthy-8b", "--quantization", "fp8"], ""),
        (["check", "--demo", "healthy-8b", "--model", "no-such-model"], "no-such-model"),
    ],
)
def test_bad_input_is_unknown_with_one_line(argv, says, capsys):
    assert says in _one_line_unknown(main(argv), capsys)


def test_not_a_recording_is_unknown(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_text("hello\n")
    assert "not a gpumem-tui recording" in _one_line_unknown(main(["check", "--replay", str(path)]), capsys)


def test_a_corrupt_recording_is_unknown(tmp_path, capsys):
    path = tmp_path / "rec.jsonl"
    clock = ManualClock()
    collector, _node = demo_collector("healthy-8b", clock=clock)
    with Recorder(path) as recorder:
        recorder.write(collector.sample())
    header, sample = path.read_text().splitlines()
    path.write_text(f"{header}\n{sample[: len(sample) // 2]}\n{{not json\n")
    assert "holds no samples" in _one_line_unknown(main(["check", "--replay", str(path)]), capsys)


@pytest.mark.parametrize("argv", [["--bogus"], ["snapshot", "--bogus"], ["log", "x.log", "--bogus"]])
def test_other_commands_keep_exit_2_for_bad_input(argv, capsys):
    assert main(argv) == 2
    assert "unknown option --bogus" in capsys.readouterr().err


def test_an_error_inside_check_is_unknown_and_says_where(monkeypatch, capsys):
    def broken(_sample):
        raise KeyError("gpu")

    monkeypatch.setattr(check_status, "perfdata", broken)  # a bug while the text is being drawn
    err = _one_line_unknown(main(["check", "--demo", "healthy-8b", "--at", "300"]), capsys)
    assert err.startswith("gpumem-tui: check: internal error at test_check_cmd.py:") and "KeyError" in err
    Path(re.search(r"traceback in (.+)\)$", err.strip())[1]).unlink()  # the file the crash was written to


def test_no_nvml_is_unknown(capsys):
    try:
        NvmlSource().open()
        pytest.skip("NVML works on this machine")
    except NvmlUnavailable:
        pass
    assert "NVML" in _one_line_unknown(main(["check"]), capsys)


def test_piped_tables_of_every_command_lose_only_their_padding(capsys):
    # cli/output.py's console is shared: a table on a pipe is no longer padded to its width
    assert main(["catalog", "gpus"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 3 and [line for line in lines if line != line.rstrip()] == []


def test_gpus_the_job_may_not_open_are_said_plainly_and_are_not_critical(capsys):
    assert main(["check", "--demo", "slurm-denied"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK - ") and "gpu2_used=U;;;0;" in out
    assert "INFO     gpu_not_accessible  GPUs 2 and 3 are not accessible from here" in out
    assert "lost" not in out and "reset" not in out


def test_check_names_the_sizing_terms_its_plan_applied(capsys):
    """The live judgment uses the startup model's terms, and says which, as `plan --engine vllm` does."""
    assert main(["check", "--demo", "healthy-8b", "--json"]) == 0
    [plan] = json.loads(capsys.readouterr().out)["plans"]
    same = ["plan", "--engine", "vllm", "--model", plan["model"], "--gpu", "h100", "--max-model-len", "8192"]
    assert main([*same, "--utilization", "0.9", "--json"]) == 0
    engine = json.loads(capsys.readouterr().out)["engine"]
    assert plan["terms"] == engine["terms"] and "sampler_peak" in plan["terms"]
    assert (plan["kv_cache_bytes"], plan["engine_assumed"]) == (engine["kv_cache_bytes"], engine["assumed"])
    assert any(line.startswith("sampler peak of vLLM 0.33.0 assumed") for line in plan["engine_assumed"])
    assert main(["check", "--demo", "healthy-8b", "--verbose"]) == 0
    gib = plan["terms"]["sampler_peak"] / 2**30
    out = capsys.readouterr().out
    assert f"  term:    sampler peak: {gib:,.2f} GiB" in out
    # what the startup model itself assumes is said here as `plan --engine vllm` says it ('~' lines)
    assert "  assumed: sampler peak of vLLM 0.33.0 assumed as read at 0.17-0.20" in out


def test_replay_of_one_critical_sample_says_growth_cannot_be_told(tmp_path, capsys, monkeypatch):
    """One sample: the first critical finding has nothing before it. One title line, no empty table."""
    monkeypatch.setenv("COLUMNS", "120")
    path = tmp_path / "rec.jsonl"
    clock = ManualClock()
    collector, _node = demo_collector("noisy-neighbour", clock=clock)
    with Recorder(path) as recorder:
        clock.set(49)  # the notebook's 20 GiB beside the engine: critical
        recorder.write(collector.sample())
    assert main(["check", "--replay", str(path), "-v"]) == 2
    out = capsys.readouterr().out
    assert "Who grew before it cannot be told: it was raised on the first sample" in out
    assert "GPU   pid  name" not in out and "(unexpected first)" not in out
    assert "Timeline: no process started or exited, and no finding was raised." not in out  # its findings are marked


def test_check_demo_verbose_of_a_quiet_node_prints_no_empty_table(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["check", "--demo", "healthy-8b", "-v"]) == 0
    out = capsys.readouterr().out
    assert "Timeline: no process started or exited, and no finding was raised.\n" in out
    assert "at  GPU  severity  what" not in out and "Nothing critical was found in this scenario." in out
