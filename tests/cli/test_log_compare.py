"""`log FILE --compare`: the plan built from the settings a real log states, predicted line by line."""

import json
from pathlib import Path

import pytest

from gpumem_tui.cli import main

CALIBRATION = Path(__file__).resolve().parents[3] / "shared" / "calibration" / "vllm_startup_logs.json"
pytestmark = pytest.mark.skipif(not CALIBRATION.exists(), reason="shared/calibration is not beside this checkout")


def write_case(tmp_path: Path, index: int) -> Path:
    case = json.loads(CALIBRATION.read_text())[index]
    path = tmp_path / f"case{index}.log"
    path.write_text("\n".join(case["log_lines"]) + "\n")
    return path


def test_compare_a_v0_19_log_within_one_percent(tmp_path, capsys):
    assert main(["log", str(write_case(tmp_path, 18)), "--compare", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {row["key"]: row for row in out["compare"]}
    assert rows["kv_cache_gib"]["stated"] == 58.11 and abs(rows["kv_cache_gib"]["error"]) < 0.01
    assert abs(rows["weights_gib"]["error"]) < 0.01 and abs(rows["kv_cache_tokens"]["error"]) < 0.01
    assert out["engine"]["version"] == "v0.19.0"


def test_compare_human_output_names_each_line(tmp_path, capsys):
    assert main(["log", str(write_case(tmp_path, 35)), "--compare"]) == 0
    out = capsys.readouterr().out
    assert "KV cache (GiB)" in out and "58.53" in out and "predicted" in out


def test_a_log_without_the_model_asks_for_it(tmp_path, capsys):
    path = write_case(tmp_path, 2)  # a v0.6.4 excerpt: the model is only in the prose
    assert main(["log", str(path), "--compare"]) == 2
    assert "--model ID" in capsys.readouterr().err
    assert main(["log", str(path), "--compare", "--model", "llama-3.1-8b-instruct", "--json"]) == 0
    rows = {row["key"]: row for row in json.loads(capsys.readouterr().out)["compare"]}
    assert abs(rows["kv_cache_gib"]["predicted"] - 3.81) <= 0.3
