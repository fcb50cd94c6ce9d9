"""`log FILE --compare`: the plan built from the settings a real log states, predicted line by line."""

import json
from pathlib import Path

from gpumem_tui.cli import main
from gpumem_tui.planner.vllm.risks import OOM_AT_START
from tests.datafiles import CALIBRATION


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


PHI_4 = {
    "architectures": ["Phi3ForCausalLM"],
    "model_type": "phi3",
    "hidden_size": 5120,
    "intermediate_size": 17920,
    "num_hidden_layers": 40,
    "num_attention_heads": 40,
    "num_key_value_heads": 10,
    "vocab_size": 100352,
    "max_position_embeddings": 16384,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "_name_or_path": "microsoft/phi-4",
}


def test_a_model_outside_the_catalog_is_compared_from_its_config(tmp_path, capsys):
    """A model the catalog does not hold: phi-4's real log with the model renamed to a name no catalog entry
    has (the catalog now holds phi-4 itself); --config gives its shapes, and the prediction lands within 1 %
    of the weights and the pool the real log states."""
    path = write_case(tmp_path, 32)
    path.write_text(path.read_text().replace("microsoft/phi-4", "example-org/phi-4-renamed"))
    assert main(["log", str(path), "--compare"]) == 2
    assert "--config PATH" in capsys.readouterr().err
    (tmp_path / "phi-4").mkdir()
    (tmp_path / "phi-4" / "config.json").write_text(json.dumps(PHI_4))
    assert main(["log", str(path), "--compare", "--config", str(tmp_path / "phi-4"), "--json"]) == 0
    rows = {row["key"]: row for row in json.loads(capsys.readouterr().out)["compare"]}
    assert abs(rows["weights_gib"]["error"]) < 0.01 and abs(rows["kv_cache_gib"]["error"]) < 0.01


DATA = Path(__file__).resolve().parents[1] / "data"


def test_the_title_names_the_model_given_with_model(capsys):
    """The log names no model; the title names the model --model resolves to (the catalog's id), never None."""
    path = DATA / "vllm_0.6.4_v0_llama-3.1-8b_no_model.log"
    assert main(["log", str(path), "--compare", "--model", "llama-3-8b"]) == 0
    title = capsys.readouterr().out.splitlines()[0]
    assert title.startswith("meta-llama/Meta-Llama-3-8B: vLLM 0.6.4") and "None" not in title


def test_a_log_that_started_is_never_told_it_will_fail(capsys):
    """gemma-2-27b started fine on 0.19: a predicted failure is shown as the prediction's disagreement
    with the log, with neither the failure asserted nor its advice given."""
    path = DATA / "vllm_0.19_gemma-2-27b_started.log"
    assert main(["log", str(path), "--compare", "--json"]) == 0
    ending = json.loads(capsys.readouterr().out)["outcome"]
    assert ending["log"] == "started"
    assert ending["agree"] is (ending["predicted"] == "starts")
    assert main(["log", str(path), "--compare"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert OOM_AT_START not in out and "lower --gpu-memory-utilization" not in out
    if ending["predicted"] == "fails":
        assert "DISAGREES: the log shows a complete start" in out and "not the node" in out


def test_an_old_v0_log_is_predicted_with_its_release_and_says_so(capsys):
    """A 0.7 V0 log names no version: its wording ("Loading model weights took X GB", `# cuda blocks`,
    the `file.py:N]` prefix) picks 0.7.3's V0 rules, and the note says so and how to override."""
    path = DATA / "vllm_0.7_v0_qwen2.5-7b_negative_kv.log"
    # the log shows its start failed: exit 1
    assert main(["log", str(path), "--compare", "--model", "qwen2.5-7b-instruct", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["release"] == {"version": "0.7.3", "source": "wording", "family": "0.7.x (V0)"}
    assert out["engine"]["version"] == "0.7.3" and out["outcome"]["log"] == "failed"
    assert main(["log", str(path), "--compare", "--model", "qwen2.5-7b-instruct"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "vLLM 0.7.3" in out
    assert "release inferred from the log's wording: 0.7.x (V0), predicted with 0.7.3's rules" in out
    assert "pass --vllm-version to override" in out
    assert (
        main(["log", str(path), "--compare", "--model", "qwen2.5-7b-instruct", "--vllm-version", "0.6.3", "--json"])
        == 1
    )
    out = json.loads(capsys.readouterr().out)
    assert out["release"]["source"] == "given" and out["notes"] == [] and out["engine"]["version"] == "0.6.3"


def test_compare_lists_what_the_log_does_not_state(tmp_path, capsys):
    """Case 4 ('ok, 35k, truncated') states no max_model_len: the 131,072 the prediction uses is the model's
    default and is listed as assumed; given with --max-model-len it is no longer assumed. The title names
    the model resolved, not the alias typed."""
    path = str(write_case(tmp_path, 4))
    assert main(["log", path, "--compare", "--model", "llama-3.1-8b-instruct"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("meta-llama/Llama-3.1-8B-Instruct: vLLM ") and "the assumed ones below" in first
    assert (
        "assumed: max_model_len 131,072 (the model's default; the log does not state it) — pass --max-model-len" in out
    )
    assert (
        main(["log", path, "--compare", "--model", "llama-3.1-8b-instruct", "--max-model-len", "35000", "--json"]) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert not [line for line in data["assumed"] if "max_model_len" in line]
    assert data["engine"]["max_model_len"] == 35000
