"""`gpumem-tui metrics` and `gpumem-tui log` as a user runs them: output, JSON keys, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

from calibration_data import METRICS, startup_cases
from conftest import LLAMA

from gpumem_tui.cli import main
from gpumem_tui.sources.mock.engine_server import MockEngineServer

METRICS_KEYS = {
    "engine",
    "model",
    "kv_usage_fraction",
    "kv_pool_tokens",
    "block_size",
    "cache_dtype",
    "gpu_memory_utilization",
    "requests_running",
    "requests_waiting",
    "preemptions_total",
}
LOG_KEYS = {
    "vllm_version",
    "model",
    "tensor_parallel_size",
    "dtype",
    "quantization",
    "kv_cache_dtype",
    "gpu_memory_utilization",
    "max_model_len",
    "total_gpu_memory_gib",
    "weights_gib",
    "non_torch_gib",
    "activation_peak_gib",
    "cudagraph_estimated_gib",
    "cudagraph_gib",
    "kv_cache_gib",
    "num_gpu_blocks",
    "kv_cache_tokens",
    "max_concurrency",
    "failures",
}


def test_metrics_file_json(capsys) -> None:
    assert main(["metrics", str(METRICS / "sglang_docs_production_metrics_llama31_8b.prom"), "--json"]) == 0
    [record] = json.loads(capsys.readouterr().out)
    assert set(record) >= METRICS_KEYS
    assert (record["engine"], record["kv_usage_fraction"], record["kv_pool_tokens"]) == ("sglang", 0.28, None)


def test_metrics_live_url_human_and_json(capsys) -> None:
    with MockEngineServer([LLAMA]) as server:
        assert main(["metrics", server.url]) == 0
        human = capsys.readouterr().out
        assert main(["metrics", server.url + "/metrics", "--json"]) == 0
        [record] = json.loads(capsys.readouterr().out)
    assert (
        "vllm v1: meta-llama/Llama-3.1-8B-Instruct" in human and "476,000 tok" in human and "42.0 %" in human
    )
    assert (record["model"], record["max_model_len"], record["kv_pool_tokens"]) == (LLAMA.model, 8192, 476000)


def test_metrics_bad_inputs_are_one_line_and_an_exit_code(tmp_path, capsys) -> None:
    garbage = tmp_path / "garbage.prom"
    garbage.write_bytes(b"\x00\xff<<not metrics>>\n")
    assert main(["metrics", str(garbage)]) == 2
    assert main(["metrics", str(tmp_path / "missing.prom")]) == 2
    assert main(["metrics", "ftp://x"]) == 2
    with MockEngineServer([LLAMA]) as server:
        server.set_fault("http_500")
        assert main(["metrics", server.url]) == 3
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 4 and all(line.startswith("gpumem-tui: ") for line in errors)
    assert "HTTP 500" in errors[-1]


def test_names_with_escapes_print_literally(capsys) -> None:
    with MockEngineServer([LLAMA.model_copy(update={"model": "evil\x1b[2J\nname"})]) as server:
        assert main(["metrics", server.url]) == 0
    out = capsys.readouterr().out
    assert "\x1b[2J" not in out and "evil\\x1b[2J\\nname" in out


def test_log_json_has_the_issue_keys(tmp_path, capsys) -> None:
    path = tmp_path / "tp2.log"
    case = next(
        c
        for c in startup_cases()
        if c["tensor_parallel_size"] == 2 and c["status"] == "ok" and c["engine"] == "V1"
    )
    path.write_text("\n".join(case["log_lines"]))
    assert main(["log", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= LOG_KEYS and set(data) - LOG_KEYS == {"engine", "ranks"}
    assert data["kv_cache_gib"] == case["kv_cache_gib"] and len(data["ranks"]) == 2


def test_log_human_shows_units_ranks_and_failures(tmp_path, capsys) -> None:
    path = tmp_path / "failed.log"
    path.write_text("\n".join(startup_cases()[3]["log_lines"]))
    assert main(["log", str(path)]) == 0
    out = capsys.readouterr().out
    assert "14.9888 GiB" in out and "FAILED (kv_cache_too_small)" in out and "23,648" in out


def test_log_without_engine_lines_is_bad_input(tmp_path, capsys) -> None:
    path = tmp_path / "empty.log"
    path.write_text("nothing here\n")
    assert main(["log", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"gpumem-tui: {path}: no vLLM or SGLang startup lines found"


def test_console_script_runs_without_traceback(tmp_path) -> None:
    path = tmp_path / "x.prom"
    path.write_text("<html>oops</html>\n")
    done = subprocess.run(
        [sys.executable, "-m", "gpumem_tui", "metrics", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr and "HTML page" in done.stderr
