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


PHI_4 = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 5120,
         "intermediate_size": 17920, "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 10,
         "vocab_size": 100352, "max_position_embeddings": 16384, "tie_word_embeddings": False,
         "torch_dtype": "bfloat16", "_name_or_path": "microsoft/phi-4"}


def test_a_model_outside_the_catalog_is_compared_from_its_config(tmp_path, capsys):
    """phi-4 is not in the catalog: the log names it, --config gives its shapes, and the prediction lands
    within 1 % of the weights and the pool the real log states."""
    path = write_case(tmp_path, 32)
    assert main(["log", str(path), "--compare"]) == 2
    assert "--config PATH" in capsys.readouterr().err
    (tmp_path / "phi-4").mkdir()
    (tmp_path / "phi-4" / "config.json").write_text(json.dumps(PHI_4))
    assert main(["log", str(path), "--compare", "--config", str(tmp_path / "phi-4"), "--json"]) == 0
    rows = {row["key"]: row for row in json.loads(capsys.readouterr().out)["compare"]}
    assert abs(rows["weights_gib"]["error"]) < 0.01 and abs(rows["kv_cache_gib"]["error"]) < 0.01
