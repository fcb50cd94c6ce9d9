"""The llm-d sweep cases (tests/data/calibration/vllm_0.19_llmd_sweep.json) state what their own log lines
say: every figure, re-read by the project's log parser, is the case's figure, so a copying slip fails."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.planner.vllm.from_log import Stated
from gpumem_tui.sources.engines.logparse import parse_log
from tests.datafiles import CALIBRATION, LLMD_SWEEP, STATED_FIGURES, STATED_SETTINGS

FIGURES = STATED_FIGURES
SETTINGS = STATED_SETTINGS
CLASSES = {"dense", "moe", "mxfp4", "multimodal", "mla", "chunked"}
DEV = {
    "google/gemma-3-12b-it",
    "Qwen/Qwen3-30B-A3B",
    "openai/gpt-oss-20b",
    "deepseek-ai/DeepSeek-V2-Lite-Chat",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct",
}
EVIDENCE = {
    "moe": ("MoE backend", "backend for Unquantized MoE"),
    "multimodal": ("ForConditionalGeneration",),
    "mla": ("MLA attention backend out of",),
    "chunked": ("ChunkedLocalAttention",),
}
"""Words in a case's log lines that show each class (mxfp4 is the stated quantization)."""

CASES = json.loads(LLMD_SWEEP.read_text(encoding="utf-8"))
LOGGED = [case for case in CASES if case["log_lines"]]
IDS = [f"{i}-{c['model']}-tp{c['tensor_parallel_size']}"[:60] for i, c in enumerate(LOGGED)]


def _disagreements(case: dict) -> list[tuple]:
    """(key, parsed, stated) wherever the parse of the case's own lines differs from what it states."""
    parsed = parse_log("\n".join(case["log_lines"]) + "\n")
    out = []
    for key in FIGURES:
        got, stated = getattr(parsed, key), case[key]
        if got != stated and stated not in {getattr(rank, key, None) for rank in parsed.ranks}:
            out.append((key, got, stated))
    for key in SETTINGS:
        got = getattr(parsed, key)
        if got is not None and got != case[key]:
            out.append((key, got, case[key]))
    return out


@pytest.mark.parametrize("case", LOGGED, ids=IDS)
def test_every_figure_is_what_the_log_lines_say(case: dict) -> None:
    assert case["kv_cache_gib"] is not None and case["num_gpu_blocks"] is not None
    assert _disagreements(case) == []


def test_a_copying_slip_is_caught() -> None:
    """The check above could not pass by reading nothing: one figure changed by 0.01 GiB is a disagreement."""
    case = next(c for c in LOGGED if c["model"] == "Qwen/Qwen3-8B")
    slipped = {**case, "weights_gib": case["weights_gib"] + 0.01}
    assert [key for key, *_ in _disagreements(slipped)] == ["weights_gib"]


def test_cases_without_log_lines_are_run_summaries_that_say_so() -> None:
    bare = [case for case in CASES if not case["log_lines"]]
    assert {case["model"] for case in bare} == {"Qwen/Qwen3-14B"}
    for case in bare:
        assert case["source"].endswith(".json") and "/version-sweep/runs/" in case["source"]
        assert case["source_kind"].startswith("repository run summary") and "no log" in case["notes"]
        assert case["kv_cache_gib"] > 0 and case["kv_cache_tokens"] > 0


def test_no_case_repeats_a_log_of_the_seen_set() -> None:
    seen = {case["source"].rsplit("/", 1)[-1] for case in json.loads(CALIBRATION.read_text(encoding="utf-8"))}
    names = [case["source"].rsplit("/", 1)[-1] for case in CASES]
    assert not seen & set(names) and len(names) == len(set(names))


def test_every_case_has_the_keys_of_the_seen_set_and_two_more() -> None:
    seen = set(json.loads(CALIBRATION.read_text(encoding="utf-8"))[24])
    assert all(set(case) == seen | {"classes", "split"} for case in CASES)


def test_split_names_exactly_the_dev_models() -> None:
    assert {case["split"] for case in CASES} == {"dev", "heldout"}
    assert {case["model"] for case in CASES if case["split"] == "dev"} == DEV
    assert all(case["split"] == "heldout" for case in CASES if case["model"] not in DEV)


@pytest.mark.parametrize("case", LOGGED, ids=IDS)
def test_classes_are_what_the_log_lines_show(case: dict) -> None:
    text = "\n".join(case["log_lines"])
    shown = {name for name, words in EVIDENCE.items() if any(word in text for word in words)}
    shown |= {"mxfp4"} if case["quantization"] == "mxfp4" else set()
    assert set(case["classes"]) <= CLASSES
    assert set(case["classes"]) == (shown or {"dense"})


def test_every_case_reads_as_stated_settings() -> None:
    """bench/accuracy.py and `Stated.from_case` read the file unchanged, as they read the seen set."""
    for case in CASES:
        stated = Stated.from_case(case)
        assert stated.model == case["model"] and (stated.gpu or "").startswith("H100-80GB x")
        # The sweep's 0.95, but gpt-oss-20b at TP 2, which ran at vLLM's default (its log: "(0.9, 71.27 GiB)").
        expected = 0.9 if case["model"] == "openai/gpt-oss-20b" else 0.95
        assert stated.gpu_memory_utilization == expected
