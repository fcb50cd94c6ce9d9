"""KV pages, block counts and the token and concurrency figures, as each vLLM release computes them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpumem_tui.catalog.schema import ModelSpec
from gpumem_tui.planner.kv import kv_heads_per_gpu
from gpumem_tui.planner.vllm.versions import Rules


@dataclass(frozen=True)
class Layout:
    """How the KV cache is paged: bytes per layer-page, layers per group, the groups' kinds."""

    page_bytes: int
    group_layers: int
    groups: list[str]  # "full" or "sliding", one entry per group
    block_size: int


def layout(rules: Rules, spec: ModelSpec, kv_width: int, tp: int, block_size: int, stage_layers: int) -> Layout:
    """V1 (0.9+) puts sliding-window and full layers in equal-sized groups sharing one pool; older
    releases treat every layer as full attention. MLA caches one latent, no K/V factor, on every rank."""
    if spec.mla is not None:
        page = block_size * (spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim) * kv_width
    else:
        page = 2 * block_size * kv_heads_per_gpu(spec, tp) * spec.head_size * kv_width
    sliding = round(spec.sliding_layer_count() * stage_layers / spec.layers)
    full = stage_layers - sliding
    if not (rules.hybrid_groups and sliding and full):
        return Layout(page, stage_layers, ["full"], block_size)
    size = min(sliding, full)
    groups = ["full"] * math.ceil(full / size) + ["sliding"] * math.ceil(sliding / size)
    return Layout(page, size, groups, block_size)


def num_blocks(kv_bytes: int, lay: Layout) -> int:
    return max(0, kv_bytes // (lay.page_bytes * lay.group_layers))


def blocks_per_request(spec: ModelSpec, lay: Layout, max_model_len: int, batched_tokens: int) -> int:
    """Pages one request at the max length can need, over all groups."""
    full = math.ceil(max_model_len / lay.block_size)
    window = spec.sliding_window.size if spec.sliding_window else max_model_len
    slide = math.ceil(min(window - 1 + batched_tokens, max_model_len) / lay.block_size) + 1
    return sum(full if kind == "full" else slide for kind in lay.groups)


def tokens_and_concurrency(
    rules: Rules, spec: ModelSpec, lay: Layout, blocks: int, max_model_len: int, batched_tokens: int
) -> tuple[int, float]:
    """("GPU KV cache size" tokens, "Maximum concurrency" x) in the release's own arithmetic."""
    if rules.token_rule in ("v0", "blocks"):
        tokens = blocks * lay.block_size
        return tokens, tokens / max_model_len
    concurrency = blocks / blocks_per_request(spec, lay, max_model_len, batched_tokens)
    if rules.token_rule == "groups":
        return blocks // len(lay.groups) * lay.block_size, concurrency
    return int(concurrency * max_model_len), concurrency


def longest_fitting_len(spec: ModelSpec, lay: Layout, blocks: int, max_model_len: int, batched_tokens: int) -> int:
    """The longest max length one request could have in `blocks` pages (vLLM's estimated maximum)."""
    low, high = 0, max_model_len
    while low < high:
        mid = (low + high + 1) // 2
        if blocks_per_request(spec, lay, mid, batched_tokens) <= blocks:
            low = mid
        else:
            high = mid - 1
    return low
