"""The plan, fit, catalog, train and offload commands as a user runs them: output, JSON schema, exit codes."""

import json
import subprocess
import sys

import pytest

from gpumem_tui.cli import main

PLAN_KEYS = {"params_total", "params_active", "weights_bytes", "kv_bytes_per_token", "kv_bytes", "gpus", "per_gpu",
             "fits", "spare_bytes", "spare_fraction", "fewest_gpus", "max_users_at_context", "max_context_at_users",
             "warnings"}


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_plan_json_has_the_documented_keys_and_consistent_numbers(capsys):
    plan = run_json(capsys, "plan", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpu-memory", "80GB",
                    "--weights", "fp8", "--kv-dtype", "fp8", "--users", "40", "--context", "8192")
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


@pytest.mark.parametrize("argv, message", [
    (["plan", "--model", "llama-3.1-7b", "--gpu", "h100"], "closest: meta-llama/Llama-3.1-70B"),
    (["plan", "--model", "llama-3.1-8b", "--gpu", "h1000"], "unknown GPU 'h1000'; closest: H100"),
    (["plan", "--model", "llama-3.1-8b", "--gpu-memory", "80"], "write a number and a unit"),
    (["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--users", "-3"], "must be from 0 to"),
    (["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--overhead", "lots"], "cannot read size"),
    (["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--kv-dtype", "fp7"], "unknown KV dtype"),
    (["plan", "--model", "llama-3.1-8b"], "--gpu KEY"),
    (["plan", "--config", "/nonexistent/dir", "--gpu", "h100"], "not in the local Hugging Face cache"),
    (["fit", "--weights", "fp9"], "unknown format 'fp9'"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_an_invalid_split_explains_the_head_count(capsys):
    assert main(["plan", "--model", "qwen2.5-7b", "--gpu", "l4", "--gpus", "8", "--json"]) == 2
    err = capsys.readouterr().err
    assert "--gpus 8" in err and "28 attention heads" in err and "valid splits: 1, 2, 4" in err


def test_fit_json_has_one_cell_per_model_format_gpu(capsys):
    cells = run_json(capsys, "fit", "--models", "deepseek-v3", "llama-3.1-8b", "--gpus", "h100", "h200",
                     "--weights", "fp8")
    assert [(c["model"], c["gpu"], c["gpus"]) for c in cells] == [
        ("deepseek-ai/DeepSeek-V3", "H100-SXM-80GB", None), ("deepseek-ai/DeepSeek-V3", "H200-SXM-141GB", 8),
        ("meta-llama/Llama-3.1-8B", "H100-SXM-80GB", 1), ("meta-llama/Llama-3.1-8B", "H200-SXM-141GB", 1)]


def test_fit_table_marks_amber_cells(capsys):
    assert main(["fit", "--models", "llama-3.1-70b", "--gpus", "b200", "--weights", "bf16"]) == 0
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
    out = subprocess.run([sys.executable, "-m", "gpumem_tui", "plan", "--model", "llama-3.1-8b", "--gpu", "h100"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "Fits on 1 x H100-SXM-80GB" in out.stdout


def test_model_names_are_printed_literally_not_as_markup(tmp_path, capsys):
    (tmp_path / "m.toml").write_text(
        '[models."[bold red]evil[/]"]\narchitecture = "LlamaForCausalLM"\nlayers = 2\nhidden_size = 64\n'
        'intermediate_size = 128\nattention_heads = 4\nkv_heads = 4\nvocab_size = 100\n')
    assert main(["plan", "--model", "[bold red]evil[/]", "--gpu", "t4", "--catalog", str(tmp_path)]) == 0
    assert "[bold red]evil[/]" in capsys.readouterr().out


ENGINE_KEYS = {"name", "version", "total_gpu_memory_bytes", "weights_bytes", "non_torch_bytes",
               "activation_peak_bytes", "cudagraph_bytes", "kv_cache_bytes", "num_gpu_blocks", "kv_cache_tokens",
               "max_concurrency"}


def test_plan_engine_vllm_json_and_log_lines(capsys):
    plan = run_json(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm",
                    "--vllm-version", "0.19.0", "--utilization", "0.95", "--max-model-len", "8192")
    engine = plan["engine"]
    assert set(engine) >= ENGINE_KEYS and engine["name"] == "vllm" and engine["version"] == "0.19.0"
    assert engine["kv_cache_tokens"] == engine["num_gpu_blocks"] * 16
    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--vllm-version", "0.19.0",
                 "--utilization", "0.95", "--max-model-len", "8192"]) == 0
    out = capsys.readouterr().out
    assert "Model loading took 14.99 GiB memory" in out and "Maximum concurrency for 8,192 tokens per request" in out


def test_plan_engine_bad_version_and_quantization(capsys):
    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--vllm-version", "x"]) == 2
    assert "cannot read vLLM version" in capsys.readouterr().err
    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--quantization", "q3"]) == 2
    assert "unknown weight format or quantization 'q3'" in capsys.readouterr().err
