"""The real-GPU script's parts that run without a GPU: the shell is clean, the allocation test's plan prints
without libcuda, and the nvidia-smi comparison passes an honest reading and fails the mismatches it is for."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from gpumem_tui.cli import main

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20


def test_the_scripts_parse_and_pass_shellcheck_where_it_is_installed():
    for script in ("bench/real_gpu.sh", "bench/real_gpu_prep.sh"):
        assert subprocess.run(["bash", "-n", script], cwd=ROOT).returncode == 0, script
        if shutil.which("shellcheck"):
            out = subprocess.run(["shellcheck", script], cwd=ROOT, capture_output=True, text=True)
            assert out.returncode == 0, out.stdout


def test_the_allocation_plan_prints_without_a_gpu():
    out = subprocess.run([sys.executable, "bench/cuda_alloc.py", "--dry-run"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "expect row = context + 16384 MiB" in out.stdout


def _compare(tmp_path, snapshot: dict, csv: str) -> subprocess.CompletedProcess:
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    (tmp_path / "smi.csv").write_text(csv)
    command = [sys.executable, "bench/smi_compare.py", str(tmp_path / "snapshot.json"), str(tmp_path / "smi.csv")]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


def _smi_csv(snapshot: dict, used_extra_mib: int = 0, swap: bool = False) -> str:
    """What nvidia-smi prints for the same cards (whole MiB), optionally off by `used_extra_mib`."""
    gpus = snapshot["gpus"]
    indices = [g["index"] for g in gpus][::-1] if swap else [g["index"] for g in gpus]
    return "".join(
        f"{index}, {g['bus_id']}, {g['memory_used_bytes'] // MIB + used_extra_mib}, "
        f"{g['memory_total_bytes'] // MIB}, {g['memory_reserved_bytes'] // MIB}\n"
        for index, g in zip(indices, gpus, strict=True)
    )


def test_the_comparison_passes_the_same_reading_and_fails_a_mismatch(tmp_path, capsys):
    assert main(["snapshot", "--demo", "tp4-70b", "--json"]) == 0
    snapshot = json.loads(capsys.readouterr().out)
    same = _compare(tmp_path, snapshot, _smi_csv(snapshot))
    assert same.returncode == 0 and "ok: every GPU within 8 MiB" in same.stdout, same.stdout + same.stderr
    # memory v1's `used` counts the reserved memory: hundreds of MiB off
    v1 = _compare(tmp_path, snapshot, _smi_csv(snapshot, used_extra_mib=470))
    assert v1.returncode == 1 and "FAIL" in v1.stdout, v1.stdout
    # the same bus id under another index: not the card the index names
    swapped = _compare(tmp_path, snapshot, _smi_csv(snapshot, swap=True))
    assert swapped.returncode == 1 and "nvidia-smi calls it GPU 3" in swapped.stdout, swapped.stdout
