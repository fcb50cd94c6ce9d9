"""The plan, fit, catalog, train and offload commands as a user runs them: output, JSON schema, exit codes."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpumem_tui.cli import main

PLAN_KEYS = {
    "params_total",
    "params_active",
    "weights_bytes",
    "kv_bytes_per_token",
    "kv_bytes",
    "gpus",
    "per_gpu",
    "fits",
    "spare_bytes",
    "spare_fraction",
    "fewest_gpus",
    "max_users_at_context",
    "max_context_at_users",
    "warnings",
}


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_plan_json_has_the_documented_keys_and_consistent_numbers(capsys):
    plan = run_json(
        capsys,
        "plan",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100",
        "--gpu-memory",
        "80GB",
        "--weights",
        "fp8",
        "--kv-dtype",
        "fp8",
        "--users",
        "40",
        "--context",
        "8192",
    )
    assert set(plan) >= PLAN_KEYS
    assert plan["gpus"] == 2 and plan["fewest_gpus"] == 2 and plan["fits"]
    gpu = plan["per_gpu"]
    assert gpu["capacity_bytes"] == 80 * 10**9 and gpu["usable_bytes"] == 68 * 10**9
    assert sum(b["bytes"] for b in gpu["bands"]) == gpu["capacity_bytes"]
    assert plan["spare_bytes"] == 2 * gpu["usable_bytes"] - plan["weights_bytes"] - plan["kv_bytes"]
    assert plan["kv_bytes"] == 40 * 8192 * plan["kv_bytes_per_token"]
    assert any("look again" in w for w in plan["warnings"])


def test_plan_by_default_uses_the_reported_capacity(capsys):
    plan = run_json(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100")
    assert plan["per_gpu"]["capacity_bytes"] == 81_559 * 2**20


def test_plan_human_output_shows_both_units_and_a_verdict(capsys):
    assert main(["plan", "--model", "llama-3.1-70b", "--gpu", "h100", "--users", "40"]) == 0
    out = capsys.readouterr().out
    assert "GB" in out and "GiB" in out and "Fits on 4 x H100-SXM-80GB" in out


def test_check_exits_1_when_it_does_not_fit(capsys):
    assert main(["plan", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "1", "--check"]) == 1
    assert "Does not" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["plan", "--model", "llama-3.1-7b", "--gpu", "h100"], "closest: meta-llama/Llama-3.1-70B"),
        (["plan", "--model", "llama-3.1-8b", "--gpu", "h1000"], "unknown GPU 'h1000'; closest: H100"),
        (["plan", "--model", "llama-3.1-8b", "--gpu-memory", "80"], "write a number and a unit"),
        (["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--users", "-3"], "must be from 1 to"),
        (["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--overhead", "lots"], "cannot read size"),
        (["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--kv-dtype", "fp7"], "unknown KV dtype"),
        (["plan", "--model", "llama-3.1-8b"], "--gpu KEY"),
        (["plan", "--config", "/nonexistent/dir", "--gpu", "h100"], "not in the local Hugging Face cache"),
        (["fit", "--weights", "fp9"], "unknown format 'fp9'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_an_invalid_split_explains_the_head_count(capsys):
    assert main(["plan", "--model", "qwen2.5-7b", "--gpu", "l4", "--gpus", "8", "--json"]) == 2
    err = capsys.readouterr().err
    assert "--gpus 8" in err and "28 attention heads" in err and "valid splits: 1, 2, 4" in err


def test_fit_json_has_one_cell_per_model_format_gpu(capsys):
    cells = run_json(
        capsys, "fit", "--models", "deepseek-v3", "llama-3.1-8b", "--gpu", "h100", "h200", "--weights", "fp8"
    )
    assert [(c["model"], c["gpu"], c["gpus"]) for c in cells] == [
        ("deepseek-ai/DeepSeek-V3", "H100-SXM-80GB", None),
        ("deepseek-ai/DeepSeek-V3", "H200-SXM-141GB", 8),
        ("meta-llama/Llama-3.1-8B", "H100-SXM-80GB", 1),
        ("meta-llama/Llama-3.1-8B", "H200-SXM-141GB", 1),
    ]


def test_fit_table_marks_amber_cells(capsys):
    assert main(["fit", "--models", "llama-3.1-70b", "--gpu", "b200", "--weights", "bf16"]) == 0
    assert "1*" in capsys.readouterr().out


@pytest.mark.parametrize("kind, key", [("models", "params_b"), ("gpus", "total_mib"), ("formats", "bytes_per_param")])
def test_catalog_lists_each_kind(capsys, kind, key):
    rows = run_json(capsys, "catalog", kind)
    assert rows and all(key in row for row in rows)


def test_train_and_offload_commands(capsys):
    full = run_json(capsys, "train", "--model", "llama-3.1-70b", "--gpu", "h100")
    assert full["mode"] == "full" and full["gpus_needed_sharded"] > 8
    qlora = run_json(capsys, "train", "--model", "llama-65b", "--mode", "qlora", "--gpu-memory", "48GB")
    assert qlora["fits_one_gpu"]
    offload = run_json(capsys, "offload", "--model", "llama-3.1-70b", "--gpu", "h100", "--resident", "60GB")
    assert offload["offload"]["tokens_per_second"] < 1 and offload["kv_offload"]["fetch_wins"]


def test_the_console_script_runs_in_a_fresh_interpreter():
    out = subprocess.run(
        [sys.executable, "-m", "gpumem_tui", "plan", "--model", "llama-3.1-8b", "--gpu", "h100"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and "Fits on 1 x H100-SXM-80GB" in out.stdout


def test_model_names_are_printed_literally_not_as_markup(tmp_path, capsys):
    (tmp_path / "m.toml").write_text(
        '[models."[bold red]evil[/]"]\narchitecture = "LlamaForCausalLM"\nlayers = 2\nhidden_size = 64\n'
        "intermediate_size = 128\nattention_heads = 4\nkv_heads = 4\nvocab_size = 100\n"
    )
    assert main(["plan", "--model", "[bold red]evil[/]", "--gpu", "t4", "--catalog", str(tmp_path)]) == 0
    assert "[bold red]evil[/]" in capsys.readouterr().out


ENGINE_KEYS = {
    "name",
    "version",
    "total_gpu_memory_bytes",
    "weights_bytes",
    "non_torch_bytes",
    "activation_peak_bytes",
    "cudagraph_bytes",
    "kv_cache_bytes",
    "num_gpu_blocks",
    "kv_cache_tokens",
    "max_concurrency",
}


VLLM_8B = ["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--vllm-version", "0.19.0"]
VLLM_8B += ["--utilization", "0.95", "--max-model-len", "8192"]


def test_plan_engine_vllm_json_and_log_lines(capsys):
    plan = run_json(capsys, *VLLM_8B)
    engine = plan["engine"]
    assert set(engine) >= ENGINE_KEYS and engine["name"] == "vllm" and engine["version"] == "0.19.0"
    assert engine["kv_cache_tokens"] == engine["num_gpu_blocks"] * 16
    assert main(VLLM_8B) == 0
    out = capsys.readouterr().out
    assert "Model loading took 14.99 GiB memory" in out and "Maximum concurrency for 8,192 tokens per request" in out


def test_plan_engine_bad_version_and_quantization(capsys):
    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--vllm-version", "x"]) == 2
    assert "cannot read vLLM version" in capsys.readouterr().err
    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--quantization", "q3"]) == 2
    assert "unknown weight format or quantization 'q3'" in capsys.readouterr().err


PLAN_70B_FP8 = [
    "plan",
    "--model",
    "llama-3.1-70b",
    "--gpu",
    "h100",
    "--gpu-memory",
    "80GB",
    "--users",
    "40",
    "--context",
    "8192",
    "--weights",
    "fp8",
    "--kv-dtype",
    "fp8",
]


def test_the_engine_sizes_the_plans_weights_on_the_plans_split_at_its_context(capsys):
    """vLLM's half used to load 16-bit weights on 1 GPU at the model's 131,072 tokens (131.45 GiB, KV -68.78 GiB)
    while the plain half said 'Fits on 2 x H100'."""
    plan = run_json(capsys, *PLAN_70B_FP8, "--engine", "vllm")
    engine = plan["engine"]
    assert plan["method"] == "vllm" and plan["gpus"] == 2 and plan["fits"]
    assert engine["max_model_len"] == 8192 and not engine["failures"]
    assert engine["weights_bytes"] < 0.55 * plan["weights_bytes"]  # one rank's half of the FP8 weights
    assert plan["kv_pool_tokens"] == engine["kv_cache_tokens"] >= 40 * 8192
    assert main([*PLAN_70B_FP8, "--engine", "vllm"]) == 0
    out = capsys.readouterr().out
    assert "vLLM 0.33.0 on each of 2 GPU(s)" in out and "will fail" not in out
    assert "Fits on 2 x H100-SXM-80GB by vLLM 0.33.0's own sizing" in out and "Cross-check, plain method" in out
    assert "under 10 % of the KV pool spare" in out and "under 10 % spare (" not in out  # one verdict's warning


def test_the_inverse_questions_have_one_answer_the_engines(capsys):
    """Llama 3.1 8B on one L4 at 32k: the two halves said 12,795 and 27,552 tokens."""
    argv = ["plan", "--model", "llama-3.1-8b", "--gpu", "l4", "--gpus", "1", "--context", "32768", "--engine", "vllm"]
    plan = run_json(capsys, *argv)
    engine = plan["engine"]
    assert plan["max_context_at_users"] == engine["kv_cache_tokens"] == plan["kv_pool_tokens"]
    assert not plan["fits"] and engine["failures"] and plan["max_users_at_context"] == 0
    assert plan["cross_check"]["method"] == "plain" and plan["cross_check"]["max_context_at_users"] < 32768
    assert main([*argv, "--check"]) == 1
    out = capsys.readouterr().out
    verdicts = [line for line in out.splitlines() if line.startswith(("Fits on", "Does not", "Cannot"))]
    assert len(verdicts) == 1 and verdicts[0].startswith("Does not start on 1 x L4")
    assert f"up to {engine['kv_cache_tokens']:,} tokens" in out


def test_quantization_and_max_model_len_are_second_names_of_weights_and_context(capsys):
    base = ["plan", "--model", "llama-3.1-70b", "--gpu", "h100", "--users", "40", "--engine", "vllm"]
    by_plan = run_json(capsys, *base, "--weights", "fp8", "--context", "16384")
    by_vllm = run_json(capsys, *base, "--quantization", "fp8", "--max-model-len", "16384")
    assert by_plan == by_vllm and by_plan["weights_format"] == "fp8" and by_plan["context"] == 16384
    awq, int4 = run_json(capsys, *base, "--quantization", "awq"), run_json(capsys, *base, "--weights", "int4")
    assert awq["weights_format"] == int4["weights_format"] == "int4" and awq["gpus"] == int4["gpus"]
    assert awq["engine"]["weights_bytes"] > int4["engine"]["weights_bytes"]  # AWQ's zero points, sized as vLLM's


@pytest.mark.parametrize(
    "argv, code",
    [
        (["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--weights", "fp8", "--quantization", "w4a16"], 2),
        (["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--context", "8192", "--max-model-len", "32768"], 2),
        # check is a monitoring plugin: bad input is UNKNOWN (3)
        (
            [
                "check",
                "--demo",
                "healthy-8b",
                "--model",
                "llama-3.1-8b",
                "--context",
                "8192",
                "--max-model-len",
                "4096",
            ],
            3,
        ),
    ],
)
def test_two_names_of_one_setting_with_different_values_are_a_usage_error(capsys, argv, code):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert "name the same setting; give one" in err and len(err.strip().splitlines()) == 1


def test_the_worked_plan_example_prints_what_the_docs_say(capsys):
    """docs/commands.md: '2 in FP8 (11.7 GB spare ...)'; the seed's worked number, which the command prints."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text(encoding="utf-8")
    command = re.search(r"```sh\ngpumem-tui (plan [^\n]+)\n```", page).group(1).split()
    stated = re.search(r"or 2\s+in FP8 \((\d+\.\d) GB spare", page).group(1)
    assert main(command) == 0
    assert f"Fits on 2 x H100-SXM-80GB with {stated} GB" in capsys.readouterr().out
    said = " ".join(page.split())
    engine_claim = (
        r"2 x H100 with (\d+\.\d+) GiB of weights per GPU and a KV pool of ([\d,]+) tokens for the "
        r"([\d,]+) needed \((\d+\.\d) % to spare"
    )
    weights, pool, needed, spare = re.search(engine_claim, said).groups()
    runtime = re.search(r"CUDA graphs take (\d+\.\d+) GiB per GPU", said).group(1)
    assert main([*command, "--engine", "vllm"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"Model loading took {weights} GiB" in out and f"= {runtime} GiB" in out
    assert "Fits on 2 x H100-SXM-80GB by vLLM" in out
    assert f"holds {pool} tokens, 40 x 8,192 = {needed} needed, {spare}% of the pool to spare" in out


def test_fit_by_the_engine_gives_the_split_plan_by_the_engine_gives(capsys):
    cells = run_json(
        capsys,
        "fit",
        "--engine",
        "vllm",
        "--models",
        "llama-3.1-70b",
        "--gpu",
        "h100",
        "l40s",
        "--weights",
        "bf16",
        "fp8",
    )
    for cell in cells:
        plan = run_json(
            capsys,
            "plan",
            "--model",
            "llama-3.1-70b",
            "--gpu",
            cell["gpu"],
            "--weights",
            cell["weights_format"],
            "--kv-dtype",
            cell["kv_dtype"],
            "--users",
            "8",
            "--engine",
            "vllm",
        )
        assert cell["gpus"] == plan["fewest_gpus"] == plan["gpus"]
    plain = run_json(capsys, "fit", "--models", "llama-3.1-70b", "--gpu", "b200", "--weights", "bf16")
    by_vllm = run_json(
        capsys, "fit", "--engine", "vllm", "--models", "llama-3.1-70b", "--gpu", "b200", "--weights", "bf16"
    )
    assert plain[0]["amber"] and not by_vllm[0]["amber"]  # the plain method's 4 % spare; vLLM's pool is roomier


def test_catalog_names_each_model_s_attention_kind(capsys):
    """Llama 4's chunked local attention is its own kind beside MLA and sliding windows."""
    rows = {row["id"]: row["attention"] for row in run_json(capsys, "catalog", "models")}
    assert rows["meta-llama/Llama-4-Scout-17B-16E-Instruct"] == "chunked+full"
    assert rows["deepseek-ai/DeepSeek-V2-Lite-Chat"] == "MLA"
    assert rows["openai/gpt-oss-20b"] == "sliding+full"
