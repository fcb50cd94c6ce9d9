"""bench/accuracy.py: the per-class and per-split tables are the medians and worsts of the per-case errors,
every class of the data has a row, each error is predicted vs the case's own figure, the goal lines name
exactly the cases outside the bounds."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from gpumem_tui.units import GIB
from tests.datafiles import CALIBRATION, LLMD_SWEEP

ROOT = Path(__file__).resolve().parents[1]
KEYS = {
    "weights": ("weights_gib",),
    "activation": ("activation_peak_gib",),
    "non-torch": ("non_torch_gib",),
    "graphs": ("cudagraph_estimated_gib", "cudagraph_gib"),
    "KV GiB": ("kv_cache_gib",),
    "blocks": ("num_gpu_blocks",),
    "tokens": ("kv_cache_tokens",),
    "concurrency": ("max_concurrency",),
}


def _bench(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "bench/accuracy.py", *args], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def report() -> dict:
    return json.loads(_bench("--json"))


@pytest.fixture(scope="module")
def cases() -> dict[str, dict]:
    """Every calibration case by the name the bench gives it: #N in the seen set, LN in the sweep."""
    seen = json.loads(CALIBRATION.read_text(encoding="utf-8"))
    sweep = json.loads(LLMD_SWEEP.read_text(encoding="utf-8"))
    return {**{f"#{i}": c for i, c in enumerate(seen)}, **{f"L{i}": c for i, c in enumerate(sweep)}}


def _done(report: dict) -> list[dict]:
    return [r for r in report["cases"] if "skipped" not in r]


def test_every_case_is_measured_or_skipped_with_why(report, cases):
    assert [r["case"] for r in report["cases"]] == list(cases)
    assert all(r["skipped"].strip() for r in report["cases"] if "skipped" in r)
    assert len(_done(report)) >= 30


def test_the_class_table_has_every_class_of_the_data(report):
    sweep = json.loads(LLMD_SWEEP.read_text(encoding="utf-8"))
    present = {c for case in sweep for c in case["classes"]} | {c for r in report["cases"] for c in r["classes"]}
    assert set(report["by_class"]) == present
    assert present <= {"dense", "moe", "mxfp4", "multimodal", "mla", "chunked"}
    assert set(report["by_split"]) == {"seen", "dev", "heldout"}
    for name in present:
        measured = [r for r in report["cases"] if name in r["classes"]]
        assert report["counts"][name] == [
            sum("skipped" not in r for r in measured),
            sum("skipped" in r for r in measured),
        ]


def _check_summary(table: dict, members: list[dict]) -> None:
    for field in KEYS:
        errors = [r["fields"][field]["error"] for r in members if field in r["fields"]]
        if not errors:
            assert field not in table
            continue
        assert table[field]["cases"] == len(errors)
        assert table[field]["median"] == pytest.approx(statistics.median(abs(e) for e in errors), abs=1e-12)
        assert table[field]["worst"] == max(errors, key=abs)


def test_class_medians_and_worsts_are_those_of_the_per_case_errors(report):
    for name, table in report["by_class"].items():
        _check_summary(table, [r for r in _done(report) if name in r["classes"]])


def test_split_medians_and_worsts_are_those_of_the_per_case_errors(report):
    for name, table in report["by_split"].items():
        _check_summary(table, [r for r in _done(report) if r["split"] == name])
    _check_summary(report["all"], _done(report))


def test_each_error_is_the_prediction_against_the_case_own_figure(report, cases):
    for r in _done(report):
        case = cases[r["case"]]
        for field, got in r["fields"].items():
            logged = next(case[key] for key in KEYS[field] if case.get(key))
            assert got["log"] == logged, (r["case"], field)
            assert got["error"] == pytest.approx((got["predicted"] - logged) / logged), (r["case"], field)


def test_goal_names_exactly_the_cases_outside_the_bound(report):
    outside = [
        r["case"]
        for r in _done(report)
        if abs(r["fields"]["KV GiB"]["predicted"] - r["fields"]["KV GiB"]["log"])
        > max(0.03 * r["fields"]["KV GiB"]["log"], 0.3)
    ]
    assert report["goal"]["all"]["outside"] == outside
    kv = [abs(r["fields"]["KV GiB"]["error"]) for r in _done(report) if r["split"] == "heldout"]
    assert report["goal"]["heldout"]["kv_median"] == pytest.approx(statistics.median(kv), abs=1e-12)


def test_block_check_divides_the_log_kv_bytes_by_the_page_of_every_layer(report, cases):
    """Qwen3-8B: 36 layers x 2 (K and V) x 16 tokens x 8 KV heads x 128 head dim x 2 bytes a block."""
    row = next(r for r in _done(report) if r["model"] == "Qwen/Qwen3-8B" and r["split"] != "seen")
    check = row["block_check"]
    assert check["bytes_per_block"] == 36 * 2 * 16 * 8 * 128 * 2
    assert check["implied"] == int(cases[row["case"]]["kv_cache_gib"] * GIB) // check["bytes_per_block"]
    assert check["log"] == cases[row["case"]]["num_gpu_blocks"]
    unchecked = [r["case"] for r in _done(report) if r["block_check"]["error"] is None]
    assert all((cases[n].get("pipeline_parallel_size") or 1) > 1 or not cases[n]["num_gpu_blocks"] for n in unchecked)


def test_the_printed_tables_and_the_last_line_keep_their_wording(report):
    text = _bench()
    vllm, sglang = text.split("\nSGLang (bench/accuracy_sglang.py):\n")  # SGLang's launches come after vLLM's
    lines = vllm.rstrip().splitlines()
    for name in report["by_class"]:
        assert any(line.startswith(f"{name} ") for line in lines), name
    assert any(line.startswith("goal, held-out startups") for line in lines)
    assert lines[-1].startswith("cases: ") and "; KV cache: median error " in lines[-1]
    assert "outside max(3 %, 0.3 GiB): " in lines[-1]
    assert "goal (median <= 2 %, each within 10 %): " in sglang


def test_the_goal_names_the_cases_it_could_not_measure(tmp_path):
    """A held-out startup the catalog cannot express is not measured: the goal line must say so, or a
    skipped case reads as met. Made so on a copy of the sweep whose first held-out case names a model no
    catalog holds (the real sweep may have none skipped)."""
    cases = json.loads(LLMD_SWEEP.read_text())
    first = next(i for i, case in enumerate(cases) if case.get("split") == "heldout")
    cases[first]["model"] = "example-org/no-such-model"
    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps(cases))
    report = json.loads(_bench("--json", str(CALIBRATION), str(sweep)))
    skipped = [r["case"] for r in report["cases"] if r["split"] == "heldout" and "skipped" in r]
    assert skipped and report["goal"]["heldout"]["skipped"] == skipped
    line = next(
        line for line in _bench(str(CALIBRATION), str(sweep)).splitlines() if line.startswith("goal, held-out startups")
    )
    assert f"{len(skipped)} skipped" in line and all(name in line for name in skipped)
