"""Every real startup log in the calibration set parses to exactly the numbers its lines state."""

from __future__ import annotations

import json
import re

import pytest

from gpumem_tui.sources.engines.logparse import parse_log
from tests.datafiles import CALIBRATION, STATED_FIGURES, STATED_SETTINGS

STATED = STATED_FIGURES
SETTINGS = STATED_SETTINGS


def startup_cases() -> list[dict]:
    return json.loads(CALIBRATION.read_text(encoding="utf-8"))


CASES = startup_cases()
IDS = [f"{i}-{c['model'] or '?'}"[:60] for i, c in enumerate(CASES)]


def _text(case: dict) -> str:
    return "\n".join(case["log_lines"]) + "\n"


def _check(parsed, case: dict) -> None:
    for key in STATED:
        got, expected = getattr(parsed, key), case[key]
        per_rank = {getattr(r, key, None) for r in parsed.ranks}
        # Pipeline stages log different values; the stated one must then be the engine-wide or a rank's value.
        assert got == expected or (expected in per_rank and expected is not None), (key, got, expected)
    for key in SETTINGS:
        got = getattr(parsed, key)
        assert got is None or got == case[key], (key, got, case[key])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_case_parses_to_the_stated_values(case: dict) -> None:
    _check(parse_log(_text(case)), case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_case_without_prefixes_gives_the_same_values(case: dict) -> None:
    bare = re.sub(r"^\([^)]*pid=\d+\)\s+", "", _text(case), flags=re.M)
    parsed, original = parse_log(bare), parse_log(_text(case))
    for key in (*STATED, *SETTINGS):
        assert getattr(parsed, key) == getattr(original, key) or key in _per_rank_keys(original), key


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_case_with_ansi_colours_gives_the_same_record(case: dict) -> None:
    coloured = re.sub(r"\b(INFO|DEBUG|WARNING|ERROR)\b", "\x1b[32m\\1\x1b[0m", _text(case))
    coloured = re.sub(r"^(\([^)]*\))", "\x1b[36m\\1\x1b[0m", coloured, flags=re.M)
    assert parse_log(coloured) == parse_log(_text(case))


def _per_rank_keys(parsed) -> set[str]:
    """Without rank tags, several workers' values fold into one scope: only engine-wide ones compare."""
    return (
        {
            "total_gpu_memory_gib",
            "weights_gib",
            "non_torch_gib",
            "activation_peak_gib",
            "cudagraph_estimated_gib",
            "cudagraph_gib",
            "kv_cache_gib",
        }
        if parsed.ranks
        else set()
    )


def test_failed_cases_state_their_failure() -> None:
    kinds = {i: [f.kind for f in parse_log(_text(c)).failures] for i, c in enumerate(CASES) if c["status"] == "failed"}
    assert kinds[3] == ["kv_cache_too_small"]  # v0: max seq len larger than the KV cache holds
    assert kinds[5] == ["kv_cache_too_small"]  # negative KV budget, 0 blocks
    assert kinds[9] == ["free_memory_below_requested"]
    assert all(not parse_log(_text(c)).failures for c in startup_cases() if c["status"] == "ok")


def test_tp_log_reports_every_rank_and_the_smallest_kv() -> None:
    case = next(c for c in startup_cases() if c["tensor_parallel_size"] == 4 and "Qwen2.5-7B" in c["model"])
    parsed = parse_log(_text(case))
    assert [r.rank for r in parsed.ranks] == ["TP0", "TP1", "TP2", "TP3"]
    assert all(r.weights_gib == 3.55 and r.non_torch_gib == 2.13 for r in parsed.ranks)
    assert parsed.kv_cache_gib == min(r.kv_cache_gib for r in parsed.ranks if r.kv_cache_gib is not None)


def test_old_gb_weights_line_is_reported_as_gib() -> None:
    case = startup_cases()[2]
    assert "Loading model weights took 14.9888 GB" in case["log_lines"][0]
    assert parse_log(_text(case)).weights_gib == 14.9888
