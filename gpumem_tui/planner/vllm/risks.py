"""What will stop a vLLM launch, and what deserves a look before it: in plain words with sizes."""

from __future__ import annotations

import math

from gpumem_tui.planner.vllm import blocks as kvblocks
from gpumem_tui.planner.vllm.lengths import LONG_LEN_ENV, longest_accepted
from gpumem_tui.planner.vllm.moe_workspace import moe_workspace_bytes
from gpumem_tui.planner.vllm.profile import sampler_bytes
from gpumem_tui.planner.vllm.records import EnginePrediction, EngineSettings
from gpumem_tui.planner.vllm.sampler import sampler_parts
from gpumem_tui.planner.vllm.versions import Rules
from gpumem_tui.units import GIB, gib

OOM_AT_START = "expect an out-of-memory error at start"
"""The words of a warning that predicts a failed start (what runs after the KV cache does not fit)."""


def failures_and_warnings(
    settings: EngineSettings, rules: Rules, p: EnginePrediction, lay: kvblocks.Layout
) -> tuple[list[str], list[str]]:
    failures, warnings = _length_failures(settings), []
    free = p.total_gpu_memory_bytes - settings.other_processes_bytes
    if settings.other_processes_bytes:
        if rules.refuses_low_free_memory and free < p.requested_memory_bytes:
            failures.append(
                f"free memory at start ({gib(free)} of {gib(p.total_gpu_memory_bytes)}) is below the "
                f"requested {settings.utilization:.2f} x total = {gib(p.requested_memory_bytes)}: this "
                "release refuses to start; lower --gpu-memory-utilization or free the GPU"
            )
        elif rules.charges_other_processes:
            warnings.append(
                f"this release charges other processes' {gib(settings.other_processes_bytes)} to the "
                "KV budget: the pool shrinks by that much"
            )
        else:
            warnings.append(
                f"other processes hold {gib(settings.other_processes_bytes)} that this release does not "
                "subtract: the engine may run out of memory after start"
            )
    if p.kv_cache_bytes <= 0:
        failures.append(
            f"no memory left for the KV cache ({gib(p.kv_cache_bytes)}): weights, activations and "
            "overheads exceed the budget; raise utilization, shorten batches or add GPUs"
        )
    elif too_big := _set_pool_too_big(settings, rules, p):
        failures.append(too_big)
        return failures, warnings
    elif (
        p.num_gpu_blocks
        and kvblocks.blocks_per_request(settings.model, lay, p.max_model_len, p.max_num_batched_tokens)
        > p.num_gpu_blocks
    ):
        longest = kvblocks.longest_fitting_len(
            settings.model, lay, p.num_gpu_blocks, p.max_model_len, p.max_num_batched_tokens
        )
        longest = min(longest, longest_accepted(settings.model) or longest)
        failures.append(
            f"one request at max_model_len {p.max_model_len:,} needs more KV cache than the pool "
            f"({p.kv_cache_tokens:,} tokens); the longest that fits is about {longest:,} tokens"
        )
    warnings += _headroom(settings, rules, p, free)
    return failures, warnings


def set_pool_room(settings: EngineSettings, rules: Rules, p: EnginePrediction) -> tuple[int, int, int] | None:
    """With --kv-cache-memory (0.10.2+): what the card holds beside the pool (weights, non-torch memory, the
    profile's buffers that stay), the room that leaves for the pool, and the largest pool that also leaves
    room for the CUDA graphs and the sampler warm-up that run after it; None without the flag. vLLM takes
    the size as given, without a profile or a check against free memory (v1/worker/gpu_worker.py:344-362
    at 0.19.0); --gpu-memory-utilization then only sets the free memory it asks for at start
    (v1/worker/utils.py:403-423)."""
    if not (settings.kv_cache_memory_bytes and rules.kv_cache_memory_flag):
        return None
    free = p.total_gpu_memory_bytes - settings.other_processes_bytes
    held = held_after_pool(settings, rules, p) - p.ranks[-1].kv_cache_bytes
    held = max([held, *(rank.weights_bytes + rank.non_torch_bytes for rank in p.ranks)])
    room = free - held
    after = p.cudagraph_bytes + (warmup_bytes(settings, rules, p) if rules.v1 else 0)
    return held, room, room - after


def largest_set_pool(settings: EngineSettings, rules: Rules, p: EnginePrediction) -> int | None:
    """The largest --kv-cache-memory that starts on this split (`set_pool_room`); None without the flag."""
    room = set_pool_room(settings, rules, p)
    return room[2] if room else None


def typed_size(n_bytes: int) -> str:
    """A --kv-cache-memory size as one shell word, rounded down so that it stays within the room it names."""
    return f"{math.floor(n_bytes / GIB * 100) / 100:.2f}GiB"


def _set_pool_too_big(settings: EngineSettings, rules: Rules, p: EnginePrediction) -> str | None:
    """--kv-cache-memory past what the card has left: allocating the pool runs out of memory."""
    found = set_pool_room(settings, rules, p)
    if found is None or p.kv_cache_bytes <= found[1]:
        return None
    held, room, most = found
    free = p.total_gpu_memory_bytes - settings.other_processes_bytes
    advice = (
        f"pass --kv-cache-memory {typed_size(most)} or less (room for the CUDA graphs and sampler warm-up after it)"
        if most > 0
        else "nothing is left for a KV cache on this GPU; add GPUs or shrink the weights"
    )
    return (
        f"the KV cache asked for with --kv-cache-memory ({gib(p.kv_cache_bytes)}) does not fit: {gib(held)} "
        f"of weights and non-torch memory leave {gib(max(room, 0))} of {gib(free)}, and vLLM allocates the "
        f"size as given without checking it: {OOM_AT_START} (CUDA out of memory allocating the KV cache); "
        f"{advice}"
    )


def _length_failures(settings: EngineSettings) -> list[str]:
    """A --max-model-len past the model's maximum: vLLM raises at config time, before any memory is used."""
    derived = longest_accepted(settings.model)
    asked = settings.max_model_len
    if not (settings.check_length and asked and derived and asked > derived):
        return []
    return [
        f'vLLM refuses to start: "User-specified max_model_len ({asked}) is greater than the derived '
        f"max_model_len\" ({settings.model.id}'s maximum is {derived:,} tokens); pass --max-model-len "
        f"{derived} or less, or set {LONG_LEN_ENV}=1 if you mean it (RoPE positions past the maximum give NaN)"
    ]


def _headroom(settings: EngineSettings, rules: Rules, p: EnginePrediction, free: int) -> list[str]:
    """CUDA graphs and the sampler warm-up run after the pool is carved, in what is left: the headroom
    outside the budget and what the profile freed (vllm/utils/mem_utils.py:266-267 empties the cache once
    the profile ends, v1/worker/gpu_worker.py:666-686 warms up after capture_model at 0.19.0)."""
    if free < p.requested_memory_bytes:
        return []
    left = free - held_after_pool(settings, rules, p)
    warmup = warmup_bytes(settings, rules, p) if rules.v1 else 0
    graphs = p.cudagraph_bytes
    need = graphs + warmup
    if need <= left:
        return []
    parts = ([f"CUDA graphs (~{gib(graphs)})"] if graphs else []) + (
        [f"the sampler warm-up for {p.max_num_seqs} requests (~{gib(warmup)})"] if warmup else []
    )
    ran = f"{' and '.join(parts)} run after the KV cache is allocated and need about {gib(need)}, but"
    most = largest_set_pool(settings, rules, p)
    if most is None:
        return [
            f"{ran} at utilization {settings.utilization:.2f} {gib(max(left, 0))} is left: {OOM_AT_START}; "
            "lower --gpu-memory-utilization or --max-num-seqs"
        ]
    # the pool is the size given whatever the utilization: only a smaller size or fewer sequences make room
    return [
        f"{ran} only {gib(max(left, 0))} of the card's {gib(free)} is left beside the {gib(p.kv_cache_bytes)} "
        f"asked for with --kv-cache-memory (vLLM allocates that size whatever --gpu-memory-utilization says): "
        f"{OOM_AT_START}; "
        + (f"pass --kv-cache-memory {typed_size(most)} or less, or " if most > 0 else "")
        + "lower --max-num-seqs"
    ]


def warmup_bytes(settings: EngineSettings, rules: Rules, p: EnginePrediction) -> int:
    """What the V1 sampler warm-up allocates after the KV cache: a dummy run of min(max_num_seqs, batched
    tokens) tokens and the sampler over as many rows (v1/worker/gpu_worker.py:666-686 at 0.19.0). From
    0.17 in 16-bit the Triton buffer and the cuBLAS workspace already exist from the profile, so only the
    logits, their fp32 work and the hidden states are new (planner/vllm/sampler.py); before, the old
    estimate."""
    rows = min(p.max_num_seqs, p.max_num_batched_tokens)
    width = 4 if settings.dtype.lower().removeprefix("torch.") in ("float32", "fp32") else 2
    if not rules.sampler_from_source or width == 4:
        return sampler_bytes(rules, settings.model, rows, rows, 2)
    parts = sampler_parts(rules, settings.model, settings.gpu, rows, rows, width)
    return parts.logits + parts.fp32_work + parts.hidden


def held_after_pool(settings: EngineSettings, rules: Rules, p: EnginePrediction) -> int:
    """What the last rank (the one that samples) holds once its KV cache is allocated: weights, non-torch,
    the pool, and the profile's buffers that live as long as the worker (the Triton top-k/top-p buffer and
    cuBLAS workspace from 0.17 in 16-bit, the fused-MoE workspace). The rest of the activation peak was
    freed when the profile ended."""
    last = p.ranks[-1]
    width = 4 if settings.dtype.lower().removeprefix("torch.") in ("float32", "fp32") else 2
    tokens, seqs = p.max_num_batched_tokens, p.max_num_seqs
    kept = moe_workspace_bytes(rules, settings.model, settings.gpu, settings.quantization, tokens, width, settings.tp)
    if rules.sampler_from_source and width < 4:
        parts = sampler_parts(rules, settings.model, settings.gpu, tokens, seqs, width)
        kept += parts.topk_buffer + parts.cublas
    return last.weights_bytes + last.non_torch_bytes + last.kv_cache_bytes + kept
