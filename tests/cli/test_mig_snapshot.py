"""`snapshot` and `check` on a card in MIG mode and on an MPS-shared card: processes named by GPU, GPU
instance and compute instance, with their memory, as root and as another user."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from tests.configs import MIG_ONE_JOB


@pytest.mark.parametrize("root", [True, False], ids=["root", "user"])
def test_snapshot_shows_a_slice_process_with_its_memory(tmp_path, capsys, root):
    path = tmp_path / "mig.toml"
    path.write_text(MIG_ONE_JOB if root else "nvml_root = false\n" + MIG_ONE_JOB)
    assert main(["snapshot", "--demo", str(path), "--at", "5"]) == 0
    out = capsys.readouterr().out
    assert "No processes on any GPU" not in out
    (row,) = [line for line in out.splitlines() if line.lstrip().startswith("3100")]
    assert row.split()[1:4] == ["0:1.0", "C", "20,480"], row


def test_snapshot_of_the_mig_node(capsys):
    assert main(["snapshot", "--demo", "mig-node", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [
        (p["pid"], p["gpu_index"], p["gpu_instance_id"], p["compute_instance_id"], p["kind"]) for p in data["processes"]
    ] == [
        (3100, 0, 1, 0, "compute"),
        (3200, 0, 1, 1, "compute"),
        (3300, 0, 2, 0, "compute"),
        (3400, 1, None, None, "compute"),
        (3500, 1, None, None, "mps"),
        (3600, 1, None, None, "mps"),
    ]
    mig, h100 = data["gpus"]
    assert [(m["gpu_instance_id"], m["compute_instance_ids"]) for m in mig["mig_instances"]] == [
        (1, [0, 1]),
        (2, [0]),
        (3, [0]),
    ]
    for gpu in (mig, h100):
        held = sum(p["gpu_memory_bytes"] for p in data["processes"] if p["gpu_index"] == gpu["index"])
        assert held == gpu["memory_used_bytes"]  # every byte once: slices, MPS server and clients
    assert main(["snapshot", "--demo", "mig-node"]) == 0
    out = capsys.readouterr().out
    assert "n/a (MIG)" in out and "MIG 40gb, CI 0+1" in out
    assert [line.split()[2] for line in out.splitlines() if line.lstrip().startswith(("3500", "3600"))] == ["M", "M"]


def test_check_of_the_mig_node_finds_no_unattributed_memory(capsys):
    assert main(["check", "--demo", "mig-node", "--json"]) == 0
    codes = [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert "unattributed_memory" not in codes


A100 = "[[gpus]]\nmodel = 'a100'\n"
JOB = "[[processes]]\nid = 'job'\ngpus = [0]\nmemory_gib = 1\n"


@pytest.mark.parametrize(
    "text, words",
    [
        (
            A100 + "mig_instances_mib = [40192]\nmig_compute_instances = [2, 1]",
            "names 2 GPU instances; mig_instances_mib has 1",
        ),
        (
            A100 + "mig_instances_mib = [9856, 9856]\nmig_compute_instances = [4, 4]",
            "8 compute instances; a card has at most 7",
        ),
        (A100 + "mig_instances_mib = [40192]\n" + JOB + "mig_instance = 1", "names MIG instance 1; GPU 0 has 1"),
        (
            A100 + "mig_instances_mib = [40192]\n" + JOB + "mig_instance = 0\nmig_compute_instance = 1",
            "compute instance 1 of MIG instance 0; it has 1",
        ),
        (
            A100 + "mig_instances_mib = [40192]\n" + JOB + "mig_compute_instance = 0",
            "names a compute instance but no mig_instance",
        ),
        (A100 + JOB + "mig_instance = 0", "names MIG instance 0; GPU 0 has 0"),
    ],
    ids=[
        "split-length",
        "too-many",
        "no-such-instance",
        "no-such-compute-instance",
        "ci-without-gi",
        "not-in-mig-mode",
    ],
)
def test_a_scenario_naming_slices_that_do_not_exist_is_one_line(tmp_path, capsys, text, words):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    assert main(["snapshot", "--demo", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
