"""The release a vLLM log comes from, told by its wording when no line names the version."""

from pathlib import Path

from gpumem_tui.planner.vllm.from_log import release_of
from gpumem_tui.planner.vllm.versions import rules_for
from gpumem_tui.planner.vllm.wording import release_from_wording

DATA = Path(__file__).resolve().parents[1] / "data"


def _lines(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def test_a_064_log_is_064():
    inferred = release_from_wording(_lines("vllm_0.6.4_v0_llama-3.1-8b_no_model.log"))
    assert inferred is not None and (inferred.family, inferred.version) == ("0.6.4 (V0)", "0.6.4")


def test_a_07_v0_log_is_predicted_with_v0_rules():
    """`# cuda blocks` (0.7-0.10, V0) and the unbracketed `file.py:N]` prefix (up to 0.7) meet at 0.7.x."""
    inferred = release_from_wording(_lines("vllm_0.7_v0_qwen2.5-7b_negative_kv.log"))
    assert inferred is not None and (inferred.family, inferred.version) == ("0.7.x (V0)", "0.7.3")
    assert not rules_for(inferred.version).v1


def test_a_v0_log_of_a_later_release_still_gets_v0_rules():
    """Without the old prefix, the V0 profile lines span 0.6.5 to 0.10; the planner's V0 rules end at 0.7.3."""
    lines = [
        "the current vLLM instance can use total_gpu_memory (8.00GiB) x gpu_memory_utilization (0.70) = 5.60GiB",
        "# CUDA blocks: 0, # CPU blocks: 4681",
    ]
    inferred = release_from_wording(lines)
    assert inferred is not None and inferred.family == "0.7 to 0.10.x (V0)" and inferred.version == "0.7.3"


def test_a_v019_log_is_within_018_and_019():
    inferred = release_from_wording(_lines("vllm_0.19_gemma-2-27b_started.log"))
    assert inferred is not None and (inferred.family, inferred.version) == ("0.18 to 0.19.x (V1)", "0.19.0")


def test_one_line_tokens_mean_030_or_later():
    inferred = release_from_wording(
        ["GPU KV cache size: 1,614,896 tokens, Maximum concurrency for 32,768 tokens per request: 49.28x"]
    )
    assert inferred is not None and inferred.family == "0.30 or later (V1)"


def test_a_contradicting_line_is_left_out_and_silence_is_none():
    """A pasted mix: the narrower cue (0.6.4's profile line) wins over a V1 line that contradicts it."""
    lines = [
        "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB",
        "Available KV cache memory: 1.71 GiB",
    ]
    inferred = release_from_wording(lines)
    assert inferred is not None and inferred.version == "0.6.4"
    assert release_from_wording(["nothing about vLLM here"]) is None


def test_release_of_prefers_the_named_version_then_the_wording():
    lines = _lines("vllm_0.7_v0_qwen2.5-7b_negative_kv.log")
    assert release_of("v0.19.0", lines)["version"] == "v0.19.0"
    assert release_of("between 0.6.4.post1 and v0.6.5", lines)["version"] == "0.6.5"
    assert release_of(None, lines)["version"] == "0.7.3"
    assert release_of(None, ["no engine lines"])["source"] == "default"
    assert release_of("0.19.0", lines, given="0.8.5")["source"] == "given"
