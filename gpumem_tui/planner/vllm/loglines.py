"""The memory lines a vLLM release prints at startup, in that release's own wording and rounding."""

from __future__ import annotations

from gpumem_tui.planner.vllm.records import EnginePrediction
from gpumem_tui.planner.vllm.versions import Rules
from gpumem_tui.units import GIB

SWAP_SPACE_BYTES = 4 * GIB  # v0's default CPU swap space


def log_lines(rules: Rules, p: EnginePrediction) -> list[str]:
    """Weights, profile, graph estimate, KV memory, blocks, tokens and concurrency; `…` marks times."""
    gib = {
        name: getattr(p, name) / GIB
        for name in (
            "weights_bytes",
            "activation_peak_bytes",
            "non_torch_bytes",
            "kv_cache_bytes",
            "cudagraph_bytes",
            "total_gpu_memory_bytes",
            "requested_memory_bytes",
        )
    }
    lines = [_weights_line(rules, gib["weights_bytes"])]
    lines += _profile_lines(rules, p, gib)
    lines += _pool_lines(rules, p)
    if p.cudagraph_bytes and rules.version >= (0, 6, 4):
        lines.append(f"Graph capturing finished in … secs, took {gib['cudagraph_bytes']:.2f} GiB")
    return lines


def _weights_line(rules: Rules, weights: float) -> str:
    version = rules.version
    if version < (0, 8, 0):
        return f"Loading model weights took {weights:.4f} GB"
    if version < (0, 8, 5):
        return f"Model loading took {weights:.4f} GB and … seconds"
    if version < (0, 11, 2):
        return f"Model loading took {weights:.4f} GiB and … seconds"
    if version < (0, 14, 0):
        return f"Model loading took {weights:.4f} GiB memory and … seconds"
    return f"Model loading took {round(weights, 2)} GiB memory and … seconds"


def _profile_lines(rules: Rules, p: EnginePrediction, gib: dict[str, float]) -> list[str]:
    version, util = rules.version, p.requested_memory_bytes / p.total_gpu_memory_bytes
    if version[:3] == (0, 6, 4):
        peak = gib["weights_bytes"] + gib["activation_peak_bytes"]
        return [
            f"Memory profiling results: total_gpu_memory={gib['total_gpu_memory_bytes']:.2f}GiB "
            f"initial_memory_usage=…GiB peak_torch_memory={peak:.2f}GiB memory_usage_post_profile=…GiB "
            f"non_torch_memory={gib['non_torch_bytes']:.2f}GiB kv_cache_size={gib['kv_cache_bytes']:.2f}GiB "
            f"gpu_memory_utilization={util:.2f}"
        ]
    if (0, 6, 5) <= version < (0, 8, 0):
        return [
            "Memory profiling takes … seconds",
            f"the current vLLM instance can use total_gpu_memory ({gib['total_gpu_memory_bytes']:.2f}GiB) x "
            f"gpu_memory_utilization ({util:.2f}) = {gib['requested_memory_bytes']:.2f}GiB",
            f"model weights take {gib['weights_bytes']:.2f}GiB; non_torch_memory takes "
            f"{gib['non_torch_bytes']:.2f}GiB; PyTorch activation peak memory takes "
            f"{gib['activation_peak_bytes']:.2f}GiB; the rest of the memory reserved for KV Cache is "
            f"{gib['kv_cache_bytes']:.2f}GiB.",
        ]
    lines = []
    if rules.logs_cudagraph_estimate and p.cudagraph_bytes:
        lines.append(f"Estimated CUDA graph memory: {gib['cudagraph_bytes']:.2f} GiB total")
    if version >= (0, 9, 0):
        kv = gib["kv_cache_bytes"]
        lines.append(f"Available KV cache memory: {round(kv, 2) if version >= (0, 14, 0) else f'{kv:.2f}'} GiB")
    return lines


def _pool_lines(rules: Rules, p: EnginePrediction) -> list[str]:
    length, concurrency = f"{p.max_model_len:,}", f"{p.max_concurrency:.2f}x"
    if not rules.v1:
        block_bytes = max(1, p.kv_cache_bytes // max(1, p.num_gpu_blocks)) if p.num_gpu_blocks else 0
        cpu = SWAP_SPACE_BYTES // block_bytes if block_bytes else 0
        device = "GPU" if rules.version < (0, 7, 0) else "cuda"
        return [
            f"# {device} blocks: {p.num_gpu_blocks}, # CPU blocks: {cpu}",
            f"Maximum concurrency for {p.max_model_len} tokens per request: {concurrency}",
        ]
    size = f"GPU KV cache size: {p.kv_cache_tokens:,} tokens"
    tail = f"Maximum concurrency for {length} tokens per request: {concurrency}"
    if rules.version >= (0, 30, 0):
        return [f"{size}, {tail}"]
    return [size, tail]
