"""`gpumem-tui snapshot`: the table, the JSON, recording and replaying, and the no-NVML exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import gpumem_tui.demo
from gpumem_tui.cli import main
from gpumem_tui.demo import FakeDriver
from gpumem_tui.demo.driver_abi import ERROR_NOT_SUPPORTED
from gpumem_tui.models import Sample
from gpumem_tui.sources.nvml import NvmlSource, NvmlUnavailable
from gpumem_tui.units import MIB


def nvml_works() -> bool:
    try:
        NvmlSource().open()
    except NvmlUnavailable:
        return False
    return True


def test_human_table_like_nvidia_smi(capsys):
    assert main(["snapshot", "--demo", "healthy-8b", "--at", "300"]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA H100 80GB HBM3" in out and "81,559 MiB" in out and "470 MiB" in out
    assert "VLLM::EngineCore" in out and "vllm serve meta-llama/Llama-3.1-8B" in out
    assert "at 300 s" in out and "2026-01-01 00:05:00 UTC" in out


def test_a_lost_gpu_shows_as_lost_with_its_error(capsys):
    assert main(["snapshot", "--demo", "gpu-lost", "--at", "200"]) == 0
    out = capsys.readouterr().out
    assert "LOST" in out and "nvml: GPU 2 lost: GPU is lost" in out


def test_json_follows_the_documented_schema(capsys):
    assert main(["snapshot", "--demo", "tp4-70b", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data.pop("schema") == "gpumem-tui.snapshot/1"
    sample = Sample.model_validate(data)
    assert [gpu.memory_total_bytes for gpu in sample.gpus] == [81_559 * MIB] * 4
    assert {"timestamp", "hostname", "source", "gpus", "processes", "host", "engines", "errors"} <= set(data)
    documented = (Path(__file__).resolve().parents[2] / "docs" / "snapshot-json.md").read_text()
    for key in [*data, *data["gpus"][0], *data["processes"][0], *data["host"]]:
        assert f"`{key}`" in documented, key


def test_no_nvml_exits_3_with_one_line_and_no_traceback():
    if nvml_works():
        pytest.skip("this machine has a working NVIDIA driver")
    done = subprocess.run([sys.executable, "-m", "gpumem_tui", "snapshot"], capture_output=True, text=True)
    assert done.returncode == 3 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpumem-tui: NVML unavailable:")
    assert "--demo" in lines[0] and "Traceback" not in done.stderr


def test_record_then_replay(tmp_path, capsys):
    path = tmp_path / "incident.jsonl"
    for at in ("100", "200", "300"):
        assert main(["snapshot", "--demo", "noisy-neighbour", "--at", at, "--record", str(path), "--json"]) == 0
    capsys.readouterr()
    assert main(["snapshot", "--replay", str(path), "--at", "120", "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["timestamp"] == 1_767_225_600 + 200
    assert main(["snapshot", "--replay", str(path)]) == 0  # no --at: the last sample
    assert "at 200 s" in capsys.readouterr().out


def test_replay_past_the_end_and_a_cut_off_line_warn(tmp_path, capsys):
    path = tmp_path / "incident.jsonl"
    main(["snapshot", "--demo", "idle-node", "--record", str(path), "--json"])
    with path.open("a") as handle:
        handle.write('{"timestamp": 17')
    capsys.readouterr()
    assert main(["snapshot", "--replay", str(path), "--at", "999"]) == 0
    err = capsys.readouterr().err
    assert "cut off mid-write" in err and "past the end" in err


@pytest.mark.parametrize(
    "argv, words",
    [
        (["snapshot", "--at", "5"], "--at needs --demo or --replay"),
        (["snapshot", "--demo", "healthy-7b"], "closest: healthy-8b"),
        (["snapshot", "--demo", "healthy-8b", "--at", "-1"], "must be from 0"),
        (["snapshot", "--demo", "healthy-8b", "--replay", "x.jsonl"], "not allowed with"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_another_recording_version_exits_2(tmp_path, capsys):
    path = tmp_path / "future.jsonl"
    path.write_text('{"format": "gpumem-tui-recording", "version": 9}\n')
    assert main(["snapshot", "--replay", str(path)]) == 2
    assert "format version 9" in capsys.readouterr().err


def test_outside_text_is_printed_literally(tmp_path, capsys):
    scenario = tmp_path / "evil.toml"
    scenario.write_text("""
[[gpus]]
model = "h100"
[[processes]]
id = "evil"
name = "\\u001b[31mred[/] [bold]x"
user = "[link=http://x]u"
cmdline = ["run", "\\u001b]0;title\\u0007"]
gpus = [0]
memory_gib = 1
""")
    assert main(["snapshot", "--demo", str(scenario), "--at", "5"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[31mred[/] [bold]x" in out and "[link=http://x]u" in out


def test_gpus_the_job_may_not_open_show_as_not_accessible_not_lost(capsys):
    assert main(["snapshot", "--demo", "slurm-denied"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line[:1].isdigit() and "MiB" not in line}
    assert "not accessible" in rows["2"] and "not accessible" in rows["3"]
    assert "LOST" not in out and "reset" not in out and "lost" not in out
    assert main(["snapshot", "--demo", "slurm-denied", "--json"]) == 0
    gpus = json.loads(capsys.readouterr().out)["gpus"]
    assert [(g["accessible"], g["lost"]) for g in gpus] == [
        (True, False),
        (True, False),
        (False, False),
        (False, False),
    ]


MIG_NODE = """
description = "a MIG card and a plain one"

[[gpus]]
model = "a100-sxm4-80gb"
mig_instances_mib = [40192, 19968]

[[gpus]]
model = "a100-sxm4-80gb"
"""


class NoInstanceIds(FakeDriver):
    """A driver that will not say which GPU instance a MIG device is."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fail("nvmlDeviceGetGpuInstanceId", ERROR_NOT_SUPPORTED)


def test_an_unreadable_mig_instance_id_keeps_every_gpu(tmp_path, monkeypatch, capsys):
    scenario = tmp_path / "mig.toml"
    scenario.write_text(MIG_NODE)
    monkeypatch.setattr(gpumem_tui.demo, "FakeDriver", NoInstanceIds)
    assert main(["snapshot", "--demo", str(scenario), "--json"]) == 0
    gpus = json.loads(capsys.readouterr().out)["gpus"]
    assert [g["index"] for g in gpus] == [0, 1]
    assert [m["gpu_instance_id"] for m in gpus[0]["mig_instances"]] == [None, None]
    assert main(["snapshot", "--demo", str(scenario)]) == 0
    out = capsys.readouterr().out
    assert "0:?" in out and "None" not in out
    assert main(["check", "--demo", str(scenario)]) == 0  # a driver field is never bad input, nor critical
    assert capsys.readouterr().out.startswith("OK - ")
