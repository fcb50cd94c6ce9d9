"""Startup failures in words: free memory below the requested share, KV cache too small, OOMs."""

from __future__ import annotations

import re

from gpumem_tui.sources.engines.logoom import oom_clues, summary
from gpumem_tui.sources.engines.startup_log import Failure


def failure_for(rule: str, match: re.Match[str], line: str) -> Failure | None:
    """The failure a matched line states, or None when the rule is not a failure."""
    g = match.groupdict()
    text = line.strip()[:400]
    if rule == "startup_free_error":
        device = f" on {g['device']}" if g.get("device") else ""
        return Failure(
            kind="free_memory_below_requested",
            line=text,
            message=(
                f"free memory at startup{device} ({g['free']} of {g['total_gpu_memory_gib']} GiB) is below "
                f"the requested share ({g['gpu_memory_utilization']} = {g['requested']} GiB); "
                "other processes hold the rest"
            ),
        )
    if rule == "kv_too_small_v1":
        estimate = f"; the longest that fits is about {g['estimated']} tokens" if g.get("estimated") else ""
        return Failure(
            kind="kv_cache_too_small",
            line=text,
            message=(
                f"one request at the max length {g['max_model_len']} needs {g['needed']} GiB of KV cache, "
                f"but only {g['kv_cache_gib']} GiB is left for it{estimate}"
            ),
        )
    if rule == "kv_too_small_v0":
        return Failure(
            kind="kv_cache_too_small",
            line=text,
            message=(
                f"the max length {g['max_model_len']} is more than the KV cache holds ({g['kv_cache_tokens']} tokens)"
            ),
        )
    if rule in ("no_kv_memory", "sg_not_enough"):
        return Failure(kind="kv_cache_too_small", line=text, message="no memory is left for the KV cache")
    if rule == "sampler_warmup_oom":
        return Failure(
            kind="sampler_warmup_oom",
            line=text,
            message=(
                f"out of memory warming up the sampler with {g['num_reqs']} requests, after the KV cache was "
                "allocated: lower gpu_memory_utilization or max_num_seqs"
            ),
        )
    if rule == "cuda_oom":
        clues = oom_clues(line)
        return Failure(kind="cuda_out_of_memory", line=text, message=summary(clues), oom=clues)
    return None


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
