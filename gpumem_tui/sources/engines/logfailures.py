"""Startup failures in words: free memory below the requested share, KV cache too small, OOMs."""

from __future__ import annotations

import re
from collections.abc import Callable

from gpumem_tui.sources.engines.logoom import oom_clues, summary
from gpumem_tui.sources.engines.startup_log import Failure, FailureKind


def _free_below_requested(g: dict[str, str]) -> str:
    device = f" on {g['device']}" if g.get("device") else ""
    return (
        f"free memory at startup{device} ({g['free']} of {g['total_gpu_memory_gib']} GiB) is below "
        f"the requested share ({g['gpu_memory_utilization']} = {g['requested']} GiB); "
        "other processes hold the rest"
    )


def _kv_too_small_v1(g: dict[str, str]) -> str:
    estimate = f"; the longest that fits is about {g['estimated']} tokens" if g.get("estimated") else ""
    return (
        f"one request at the max length {g['max_model_len']} needs {g['needed']} GiB of KV cache, "
        f"but only {g['kv_cache_gib']} GiB is left for it{estimate}"
    )


def _kv_too_small_v0(g: dict[str, str]) -> str:
    return f"the max length {g['max_model_len']} is more than the KV cache holds ({g['kv_cache_tokens']} tokens)"


def _no_kv_memory(_g: dict[str, str]) -> str:
    return "no memory is left for the KV cache"


def _sampler_warmup_oom(g: dict[str, str]) -> str:
    return (
        f"out of memory warming up the sampler with {g['num_reqs']} requests, after the KV cache was "
        "allocated: lower gpu_memory_utilization or max_num_seqs"
    )


FAILURES: dict[str, tuple[FailureKind, Callable[[dict[str, str]], str]]] = {
    "startup_free_error": ("free_memory_below_requested", _free_below_requested),
    "kv_too_small_v1": ("kv_cache_too_small", _kv_too_small_v1),
    "kv_too_small_v0": ("kv_cache_too_small", _kv_too_small_v0),
    "no_kv_memory": ("kv_cache_too_small", _no_kv_memory),
    "sg_not_enough": ("kv_cache_too_small", _no_kv_memory),
    "sg_no_kv_memory": ("kv_cache_too_small", _no_kv_memory),
    "sampler_warmup_oom": ("sampler_warmup_oom", _sampler_warmup_oom),
}
"""Each log rule that states a failure: its kind and its words, from the line's named groups."""


def failure_for(rule: str, match: re.Match[str], line: str) -> Failure | None:
    """The failure a matched line states, or None when the rule is not a failure."""
    text = line.strip()[:400]
    if rule == "cuda_oom":
        clues = oom_clues(line)
        return Failure(kind="cuda_out_of_memory", line=text, message=summary(clues), oom=clues)
    if rule not in FAILURES:
        return None
    kind, words = FAILURES[rule]
    return Failure(kind=kind, line=text, message=words(match.groupdict()))


def derived_failure(values: dict, failures: list[Failure]) -> Failure | None:
    """A KV budget at or below zero (or zero blocks) means no KV cache, even when no error line follows."""
    if any(f.kind == "kv_cache_too_small" for f in failures):
        return None
    kv, blocks = values.get("kv_cache_gib"), values.get("num_gpu_blocks")
    if isinstance(kv, float) and kv <= 0:
        return Failure(kind="kv_cache_too_small", line="", message=f"the memory left for the KV cache is {kv} GiB")
    if blocks == 0:
        return Failure(kind="kv_cache_too_small", line="", message="the engine got 0 KV-cache blocks")
    return None


def with_more_clues(failure: Failure, joined: str) -> Failure | None:
    """An out-of-memory failure read again from its message joined with the next line of a wrapped paste,
    or None when that line adds no clue (the message ended)."""
    clues = oom_clues(joined) if failure.kind == "cuda_out_of_memory" else None
    if clues is None or clues == failure.oom:
        return None
    return failure.model_copy(update={"oom": clues, "message": summary(clues)})
