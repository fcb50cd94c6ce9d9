"""Startup lines of releases and engines the calibration set lacks, written from the verbatim templates."""

from __future__ import annotations

from pathlib import Path

from gpumem_tui.sources.engines.logparse import parse_log

DATA = Path(__file__).parent / "data" / "startup_logs"


def _log(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


V1_030 = _log("vllm_0.30_one_line_tokens.log")

V1_080_OLD_GB = _log("vllm_0.8.0_gb_weights.log")

V1_EARLY = _log("vllm_0.7_v1_early_blocks.log")

FAILURES = _log("vllm_v1_failures.log")

SGLANG = _log("sglang_tp2.log")


def test_v030_one_line_tokens_and_concurrency_and_the_v027_usage_line() -> None:
    parsed = parse_log(V1_030)
    assert (parsed.vllm_version, parsed.model, parsed.kv_cache_dtype) == ("v0.30.0", "Qwen/Qwen3-8B", "fp8")
    assert parsed.dtype == "torch.bfloat16"  # the top-level dtype, not the one nested in compilation_config
    assert (parsed.kv_cache_tokens, parsed.max_concurrency, parsed.max_model_len) == (1614896, 49.28, 32768)
    assert (parsed.weights_gib, parsed.kv_cache_gib, parsed.cudagraph_estimated_gib) == (15.27, 55.4, 0.92)
    assert (parsed.activation_peak_gib, parsed.cudagraph_gib, parsed.total_gpu_memory_gib) == (
        1.89,
        0.95,
        79.19,
    )
    assert parsed.gpu_memory_utilization == 0.9 and parsed.failures == []


def test_v080_gb_model_loading_line_is_gib() -> None:
    parsed = parse_log(V1_080_OLD_GB)
    assert parsed.weights_gib == 14.9889
    assert (parsed.kv_cache_tokens, parsed.max_model_len, parsed.max_concurrency) == (448592, 131072, 3.42)
    assert parsed.cudagraph_gib == 0.57 and parsed.vllm_version == "v0.8.0"


def test_v1_early_blocks_line() -> None:
    parsed = parse_log(V1_EARLY)
    assert (parsed.num_gpu_blocks, parsed.weights_gib, parsed.max_concurrency) == (27000, 14.9888, 52.73)


def test_failures_each_once_and_in_words() -> None:
    parsed = parse_log(FAILURES)
    assert [f.kind for f in parsed.failures] == [
        "kv_cache_too_small",
        "sampler_warmup_oom",
        "cuda_out_of_memory",
    ]
    assert "131072" in parsed.failures[0].message and "24896" in parsed.failures[0].message
    assert "1024" in parsed.failures[1].message
    assert parsed.kv_cache_gib == 3.04 and parsed.max_model_len == 131072


def test_sglang_startup_lines() -> None:
    parsed = parse_log(SGLANG)
    assert parsed.engine == "sglang" and parsed.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert (parsed.tensor_parallel_size, parsed.gpu_memory_utilization, parsed.kv_cache_dtype) == (
        2,
        0.88,
        "auto",
    )
    assert (parsed.weights_gib, parsed.kv_cache_tokens, parsed.max_model_len) == (7.52, 1060000, 131072)
    assert parsed.kv_cache_gib == 60.4  # the smaller rank: 30.20 + 30.20
    assert [r.rank for r in parsed.ranks] == ["TP0", "TP1"] and parsed.ranks[0].kv_cache_gib == 60.5
    assert parsed.cudagraph_gib == 1.12 and parsed.dtype == "torch.bfloat16"


def test_thousands_separators_either_way() -> None:
    plain = V1_080_OLD_GB.replace("448,592", "448592").replace("131,072", "131072")
    assert parse_log(plain) == parse_log(V1_080_OLD_GB)


def test_vllm_omni_stage_tag_and_lines_without_any_prefix() -> None:
    tagged = "[Stage-1] INFO 03-18 12:00:10 [gpu_model_runner.py:1128] Model loading took 3.5 GiB and 1.0 seconds"
    assert parse_log(tagged).weights_gib == 3.5
    assert parse_log("Available KV cache memory: 12.5 GiB").kv_cache_gib == 12.5


def test_a_sentence_ending_period_never_joins_the_number() -> None:
    line = (
        "INFO 01-01 00:00:00 worker.py:1] model weights take 5.20GiB; non_torch_memory takes 0.03GiB; "
        "PyTorch activation peak memory takes 1.42GiB; "
        "the rest of the memory reserved for KV Cache is 9.5GiB."
    )
    parsed = parse_log(line)
    assert (parsed.weights_gib, parsed.kv_cache_gib, parsed.activation_peak_gib) == (5.2, 9.5, 1.42)


def test_unrelated_text_gives_an_empty_record() -> None:
    parsed = parse_log("hello\nworld\n\x00\x1b[2J")
    assert parsed.engine is None and parsed.failures == [] and parsed.weights_gib is None
