"""`log FILE --compare` on SGLang logs: every calibration launch with log lines, predicted by SGLang's own
rules (planner/sglang) through the command; the release read from the wording; hostile ServerArgs lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpumem_tui.cli import main
from gpumem_tui.planner.sglang.from_log import release_of
from tests.datafiles import SGLANG_CALIBRATION

CASES = {case["id"]: case for case in json.loads(SGLANG_CALIBRATION.read_text())}

# config.json files for models the catalog does not hold. Only the attention shape decides the pool when the
# log states its free memory; the shapes below are the ones the reference's section 5 and each case's notes
# state (layers, KV heads, head_dim), the rest as the models' published configs give them.
QWQ_32B = {  # QwQ-32B's model card (awesome-akash QwQ-32B/README.md: 64 layers, 40 Q / 8 KV heads, 131,072
    # context) and QwQ-32B-Preview's dumped Qwen2Config (Retruth/deontic nlp_models/qwq/README.md)
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 5120,
    "intermediate_size": 27648,
    "num_hidden_layers": 64,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "vocab_size": 152064,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "_name_or_path": "Qwen/QwQ-32B",
}
LLAMA_VISION = {  # section 5: 40 layers x 8 KV heads x 128 (self- and cross-attention layers all cached)
    "architectures": ["MllamaForConditionalGeneration"],
    "model_type": "mllama",
    "_name_or_path": "meta-llama/Llama-3.2-11B-Vision-Instruct",
    "text_config": {
        "model_type": "mllama_text_model",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 40,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38],
    },
    "vision_config": {
        "model_type": "mllama_vision_model",
        "hidden_size": 1280,
        "intermediate_size": 5120,
        "num_hidden_layers": 32,
        "num_global_layers": 8,
        "attention_heads": 16,
        "image_size": 560,
        "patch_size": 14,
        "num_channels": 3,
        "vision_output_dim": 7680,
    },
    "torch_dtype": "bfloat16",
}
GROK_2 = {  # section 5: 64 layers, 8 KV heads of 128 (one per rank at TP 8); the MoE sizes fill the config only
    "architectures": ["Grok1ForCausalLM"],
    "model_type": "grok-1",
    "hidden_size": 8192,
    "intermediate_size": 32768,
    "num_hidden_layers": 64,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 131072,
    "max_position_embeddings": 131072,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "torch_dtype": "bfloat16",
    "_name_or_path": "xai-org/grok-2",
}


def write_log(tmp_path: Path, case_id: str, with_server_args: bool = False) -> Path:
    """The case's log lines, verbatim; `with_server_args` puts the case's own ServerArgs line (which the
    collector abbreviated in the middle) first, as SGLang prints it first."""
    case = CASES[case_id]
    lines = ([case["server_args_line_abbreviated"]] if with_server_args else []) + case["log_lines"]
    path = tmp_path / f"{case_id}.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_config(tmp_path: Path, name: str, config: dict) -> str:
    (tmp_path / name).mkdir()
    (tmp_path / name / "config.json").write_text(json.dumps(config))
    return str(tmp_path / name)


def compare(capsys, path: Path, *more: str, code: int = 0) -> dict:
    assert main(["log", str(path), "--compare", "--json", *more]) == code, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def rows(out: dict) -> dict[str, dict]:
    return {row["key"]: row for row in out["compare"]}


def logged_tokens(case_id: str) -> int:
    return int(CASES[case_id]["log_lines"][-1].split("max_total_num_tokens=")[1].split(",")[0])


# The four worked checks of the reference's section 5 (their logs state the free memory before and after the
# weights): SGLang's own sums on its own measurements reproduce the pool within 0.5 %.
WORKED = [
    ("docs-send-request-llama31-8b-2025-01-23", False, ()),
    ("sglang-repo-nb-llama32-11b-vision-48gb-2024-10-31", False, ("vision", LLAMA_VISION)),
    ("blog-grok2-fp8-8xH100-v0.5.2rc2", True, ("grok-2", GROK_2)),
    ("llms-in-clouds-qwq32b-4xL4-2025-03-08", False, ("qwq-32b", QWQ_32B)),
]


@pytest.mark.parametrize(("case_id", "server_args", "config"), WORKED)
def test_the_worked_checks_reproduce_the_logged_pool_within_half_a_percent(
    tmp_path, capsys, case_id, server_args, config
):
    more = ("--config", write_config(tmp_path, *config)) if config else ()
    out = compare(capsys, write_log(tmp_path, case_id, server_args), *more)
    tokens = rows(out)["kv_cache_tokens"]
    assert tokens["stated"] > 0 and abs(tokens["error"]) <= 0.005
    assert tokens["uses"] == ["free_before_weights_gib", "free_after_weights_gib"]  # said, never silent
    assert rows(out)["kv_cache_tokens_settings_alone"]["uses"] == []
    assert out["outcome"]["predicted"] == "starts" and out["outcome"]["agree"] in (True, None)
    assert out["engine"]["avail_measured"] and out["engine"]["total_measured"]


def test_the_k_and_v_sizes_and_the_weights_of_the_docs_run(tmp_path, capsys):
    """Llama 3.1 8B: K + V 54.26 GiB as logged; the free memory before the weights predicted from an
    80 GB card within 0.5 % (78.81 GB logged: GiB)."""
    out = compare(capsys, write_log(tmp_path, "docs-send-request-llama31-8b-2025-01-23"))
    assert abs(rows(out)["kv_cache_gib"]["error"]) <= 0.005
    assert abs(rows(out)["free_before_weights_gib"]["error"]) <= 0.005
    assert any("GPU H100" in line and "the log names none" in line for line in out["assumed"])


@pytest.mark.parametrize(
    ("case_id", "more", "bound"),
    [
        # free before weights measured; the fraction is the release's default (0.88 at TP 1 for 0.3-0.4)
        (
            "mi300-testing-llama3-8b-mi300x-bench-latency-2024-10-10",
            ("--model", "meta-llama/Meta-Llama-3-8B-Instruct"),
            0.005,
        ),
        # no Load weight begin line: the free memory before is predicted from the card the numbers imply
        ("sglang-2468-mistral-7b-v0.1-24gb", ("--model", "mistralai/Mistral-7B-Instruct-v0.1"), 0.02),
        # gte-Qwen2-7B is Qwen2-7B's shape (28 layers, 4 KV heads of 128), which the catalog's Qwen2.5-7B shares
        ("sglang-repo-nb-gte-qwen2-7b-embed-48gb-2024-10-29", ("--model", "Qwen/Qwen2.5-7B-Instruct"), 0.005),
        # only the KV line: everything from the settings (the command's --tp 4 --mem-fraction-static 0.93)
        (
            "vllm-21348-qwen3-235b-fp8-4xH100",
            ("--model", "Qwen/Qwen3-235B-A22B-FP8", "--tp", "4", "--mem-fraction-static", "0.93"),
            0.10,
        ),
        # only the max_total line; R1 has V3's config; the command's --tp 16 --mem-fraction-static 0.93; the
        # catalog has no H20, so the card is the smallest that holds the pool and the weights
        (
            "sglang-docs-k8s-dsr1-tp16-2x8xH20",
            ("--model", "deepseek-v3", "--tp", "16", "--mem-fraction-static", "0.93"),
            0.10,
        ),
    ],
)  # fmt: skip
def test_the_other_launches_with_a_pool_line(tmp_path, capsys, case_id, more, bound):
    out = compare(capsys, write_log(tmp_path, case_id), *more)
    tokens = rows(out)["kv_cache_tokens"]
    assert tokens["stated"] and abs(tokens["error"]) <= bound
    assert out["outcome"]["predicted"] == "starts"


def test_the_not_enough_memory_launch_is_predicted_to_fail(tmp_path, capsys):
    """DeepSeek-V4-Pro at 0.88 on 8 x H200: its lines state the free memory after the weights and their
    usage (so before), and the fraction. The catalog has no V4: V3 stands in, which the outcome does not
    depend on (rest = 12.25 - 137.90 x 0.12 < 0 whatever a token's cell)."""
    path = write_log(tmp_path, "inferencex-2128-dsv4-pro-fp8-8xH200-mfs088-oom")
    out = compare(capsys, path, "--model", "deepseek-v3", "--tp", "8", code=1)
    assert out["outcome"]["predicted"] == "fails" and out["outcome"]["agree"] is True
    assert out["engine"]["mem_fraction_static"] == 0.88 and out["engine"]["profiled_tokens"] < 0
    assert out["engine"]["kv_cache_tokens"] == 0  # no pool: not a negative count
    assert any("mem usage" in line for line in out["assumed"])


def test_the_oom_launch_without_log_lines_cannot_be_compared(tmp_path, capsys):
    """Qwen3-VL-235B AWQ on 4 x 48 GB: the source shows the command and the error's title, no log line, so
    there is nothing for --compare to hold a prediction against (and the catalog has no Qwen3-VL): the
    honest outcome is the refusal."""
    case = CASES["sglang-11471-qwen3-vl-235b-awq-4x4090-48gb-oom"]
    assert case["log_lines"] == [] and case["outcome"] == "oom"
    path = tmp_path / "empty.log"
    path.write_text("")
    assert main(["log", str(path), "--compare"]) == 2
    assert "no vLLM or SGLang startup lines" in capsys.readouterr().err


@pytest.mark.parametrize("case_id", ["glm5-fp8-8xMI355X-rocm-2026-02-26", "sglang-pr15909-qwen3-omni-30b-a3b-tp4"])
def test_launches_whose_model_the_catalog_lacks_ask_for_it(tmp_path, capsys, case_id):
    """GLM-5 (MLA with DSA's indexer cache, not modelled) and Qwen3-Omni: their lines name no model, and no
    catalog entry holds them; the command asks, in one line."""
    assert main(["log", str(write_log(tmp_path, case_id)), "--compare"]) == 2
    err = capsys.readouterr().err
    assert "--model ID or --config PATH" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("case_id", "server_args", "version", "family"),
    [
        ("docs-send-request-llama31-8b-2025-01-23", False, "0.4.1.post6", "0.4.1.post6 to 0.4.2.x"),
        ("sglang-2468-mistral-7b-v0.1-24gb", False, "0.4.0", "0.3.0 to 0.4.1.post5"),
        ("llms-in-clouds-qwq32b-4xL4-2025-03-08", False, "0.4.6.post2", "0.4.3.post3 to 0.4.6.x"),
        ("blog-grok2-fp8-8xH100-v0.5.2rc2", True, "0.5.6", "0.4.7 to the newest"),
        ("glm5-fp8-8xMI355X-rocm-2026-02-26", False, "0.5.6", "0.4.6 to the newest"),
    ],
)
def test_the_release_is_read_from_the_templates_shown_and_missing(case_id, server_args, version, family):
    """The K/V line without #tokens (0.4.1.post6-0.4.3.post2) with the old max_total line (to 0.4.2.x); no KV
    line between the weights' end and the pool's end (before 0.4.1.post6); #tokens with chunked_prefill_size
    and no available_gpu_mem (0.4.3.post3-0.4.6.x); available_gpu_mem (0.4.7+); the MLA line (0.4.6+)."""
    case = CASES[case_id]
    lines = ([case["server_args_line_abbreviated"]] if server_args else []) + case["log_lines"]
    release = release_of(lines)
    assert (release.version, release.family, release.source) == (version, family, "wording")
    assert release.note.startswith(f"release inferred from the wording: {family}")


def test_the_release_is_said_and_sglang_version_overrides_it(tmp_path, capsys):
    path = write_log(tmp_path, "docs-send-request-llama31-8b-2025-01-23")
    out = compare(capsys, path)
    assert out["release"] == {"version": "0.4.1.post6", "source": "wording", "family": "0.4.1.post6 to 0.4.2.x"}
    assert out["notes"][0].startswith("release inferred from the wording")
    given = compare(capsys, path, "--sglang-version", "0.4.2")
    assert given["release"]["source"] == "given" and given["engine"]["version"] == "0.4.2" and not given["notes"]
    assert main(["log", str(path), "--compare", "--sglang-version", "0.9.1"]) == 2
    assert main(["log", str(path), "--compare", "--vllm-version", "0.19.0"]) == 2
    assert "for vLLM logs" in capsys.readouterr().err


def test_the_human_output_says_each_rows_basis_and_the_release(tmp_path, capsys):
    assert main(["log", str(write_log(tmp_path, "docs-send-request-llama31-8b-2025-01-23")), "--compare"]) == 0
    out = capsys.readouterr().out
    assert "SGLang 0.4.1.post6" in out and "release inferred from the wording" in out
    line = next(row for row in out.splitlines() if row.startswith("KV cache tokens "))
    assert "444,500" in line and "log: free before weights + free after weights" in line
    assert "GB for sizes divided by 2^30" in out


def test_a_truncated_server_args_line_keeps_only_whole_pairs(tmp_path, capsys):
    """A collector cut the line inside `mem_fraction_static=0.8`: the 0.8 is not read (it was 0.88), the
    fraction is the release's default and said so; the cut is said too."""
    lines = CASES["docs-send-request-llama31-8b-2025-01-23"]["log_lines"]
    cut = lines[0][: lines[0].index("mem_fraction_static=0.88") + len("mem_fraction_static=0.8")]
    path = tmp_path / "cut.log"
    path.write_text("\n".join([cut, *lines[1:]]) + "\n")
    out = compare(capsys, path)
    args = out["log"]["server_args"]
    assert args["complete"] is False and args["mem_fraction_static"] is None and args["tp_size"] is None
    assert args["model_path"] == "meta-llama/Meta-Llama-3.1-8B-Instruct"
    assert any("cut short" in line for line in out["assumed"])
    assert any(line.startswith("mem_fraction_static: the release's default") for line in out["assumed"])


def test_a_path_cut_inside_its_quotes_is_not_read(tmp_path, capsys):
    path = tmp_path / "cut.log"
    path.write_text("[2025-01-23 19:34:55] server_args=ServerArgs(model_path='/models/Meta-Lla\n")
    assert main(["log", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["server_args"]["model_path"] is None


def test_escapes_in_model_path_stay_literal_on_one_line(tmp_path, capsys):
    r"""A model_path with `\n` and a markup-looking `[bold]`: kept as written (never decoded into a newline),
    and the refusal that names it is one line, the name as the catalog's lookup quotes it (repr)."""
    lines = CASES["docs-send-request-llama31-8b-2025-01-23"]["log_lines"]
    hostile = r"/models/evil\n[bold]x\x1b[2J"
    path = tmp_path / "evil.log"
    path.write_text("\n".join([lines[0].replace("meta-llama/Meta-Llama-3.1-8B-Instruct", hostile), *lines[1:]]) + "\n")
    assert main(["log", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["server_args"]["model_path"] == hostile
    assert main(["log", str(path), "--compare"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "[bold]x" in err and "\x1b" not in err  # the name as repr writes it


def test_sglang_options_on_a_vllm_log_are_refused(capsys):
    path = Path(__file__).resolve().parents[1] / "data" / "vllm_0.19_gemma-2-27b_started.log"
    assert main(["log", str(path), "--compare", "--mem-fraction-static", "0.9"]) == 2
    assert "--mem-fraction-static is for SGLang logs" in capsys.readouterr().err


def test_a_log_without_the_begin_line_is_not_compared_with_itself(capsys):
    """Free memory before the weights rebuilt as after + mem usage: predicting free-after from it would give
    the log's own number less the predicted weights, so that row is predicted from the settings alone."""
    path = Path(__file__).parents[1] / "sources" / "engines" / "data" / "startup_logs" / "sglang_tp2.log"
    out = compare(capsys, path)
    rows = {row["key"]: row for row in out["compare"]}
    assert rows["free_after_weights_gib"]["uses"] == []
    assert any("Load weight begin line" in line for line in out["assumed"])


def test_the_plain_log_table_names_sglang_settings_by_sglang_names(tmp_path, capsys):
    path = write_log(tmp_path, "docs-send-request-llama31-8b-2025-01-23")
    assert main(["log", str(path)]) == 0
    out = capsys.readouterr().out
    assert "mem_fraction_static" in out and "gpu_memory_utilization" not in out and "vLLM version" not in out
