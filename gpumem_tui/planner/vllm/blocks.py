"""KV pages, block counts and the token and concurrency figures, as each vLLM release computes them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpumem_tui.catalog.schema import GpuSpec, ModelSpec
from gpumem_tui.planner.kv import kv_heads_per_gpu
from gpumem_tui.planner.vllm.versions import Rules


@dataclass(frozen=True)
class Layout:
    """How the KV cache is paged: bytes per layer-page, layers per group, the groups' kinds."""

    page_bytes: int
    group_layers: int
    groups: list[str]  # "full", "sliding" or "chunked", one entry per group
    block_size: int
    in_flight_batches: int = 1
    """Scheduler batches a sliding or chunked group keeps a request's pages for (`Rules.in_flight_batches`)."""


DEFAULT_BLOCK = 16  # CacheConfig.DEFAULT_BLOCK_SIZE (config/cache.py:34 at 0.19.0)
FLASHMLA_BLOCK = 64  # FlashMLA kernels page only 64 tokens (v1/attention/backends/mla/flashmla.py:57-58)
FLASHINFER_MLA_BLOCKS = (32, 64)  # v1/attention/backends/mla/flashinfer_mla.py:49-50
FLASHINFER_MLA_NOPE = (64, 128, 192)  # qk_nope_head_dim its kernel takes (flashinfer_mla.py:80-89)
CUTLASS_MLA_BLOCK = 128  # v1/attention/backends/mla/cutlass_mla.py:49-50
READ_RELEASES = ((0, 11), (0, 19), (0, 20), (0, 25), (0, 33))
"""The releases whose MLA backend choice was read. 0.20, 0.25 and 0.33 keep 0.19's per-generation lists and
block sizes (platforms/cuda.py:112-124 at 0.20.0, :118-136 at 0.25.0, :123-131 at 0.33.0; 0.25's
TOKENSPEED_MLA behind FLASHINFER_MLA on Blackwell takes only R1 shapes, which FLASHINFER_MLA takes first)."""


def default_block_size(rules: Rules, spec: ModelSpec, gpu: GpuSpec, kv_cache_dtype: str) -> tuple[int, str | None]:
    """The block size vLLM picks when `--block-size` is not given, and a note when the source read does
    not decide it. Non-MLA models keep the default 16. For MLA, 0.19.0 walks a backend list per GPU
    generation (platforms/cuda.py:50-97) and keeps 16 if the first usable backend's kernel takes it, else
    that backend's smallest size (platforms/interface.py:430-475, v1/attention/backend.py:189-197):
    Hopper (9.x) FLASH_ATTN_MLA, 16-bit caches only, multiples of 16 (mla/flashattn_mla.py:45-53,68-69),
    then FLASHMLA, 64; Blackwell (10.x) FLASHINFER_MLA, 32, where its kernel takes qk_nope_head_dim, else
    CUTLASS_MLA, 128; any other generation TRITON_MLA, multiples of 16 (mla/triton_mla.py:43-44,61-62).
    Before 0.19 FlashMLA's 64 (0.11.0 platforms/cuda.py:126-182)."""
    if spec.mla is None:
        return DEFAULT_BLOCK, None
    release = rules.version[:2]
    unread = None if release in READ_RELEASES else f"vLLM {release[0]}.{release[1]}'s MLA backend choice was not read"
    if release < (0, 19):
        size = FLASHMLA_BLOCK
    elif gpu.cc_major is None:
        size, unread = DEFAULT_BLOCK, f"{gpu.key}'s compute capability is not in the catalog"
    elif gpu.cc_major == 10:
        size = FLASHINFER_MLA_BLOCKS[0] if spec.mla.qk_nope_head_dim in FLASHINFER_MLA_NOPE else CUTLASS_MLA_BLOCK
    elif gpu.cc_major == 9 and kv_cache_dtype.lower().startswith("fp8"):
        size = FLASHMLA_BLOCK
    else:
        size = DEFAULT_BLOCK
    return size, (f"MLA block size {size} assumed ({unread})" if unread else None)


def layout(
    rules: Rules, spec: ModelSpec, kv_width: int, tp: int, block_size: int, stage_layers: int, pp: int = 1
) -> Layout:
    """V1 (0.9+) puts sliding-window and full layers in equal-sized groups sharing one pool, and from 0.14
    chunked local attention layers too (`layer_kinds`); a group size is the fewest layers of any kind
    (v1/core/kv_cache_utils.py:1043-1075 at 0.19.0). Otherwise every layer is full attention. MLA caches
    one latent, no K/V factor, on every rank."""
    if spec.mla is not None:
        page = block_size * (spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim) * kv_width
    else:
        page = 2 * block_size * kv_heads_per_gpu(spec, tp) * spec.head_size * kv_width
    kinds = layer_kinds(rules, spec, stage_layers)
    if len(kinds) < 2:
        return Layout(page, stage_layers, ["full"], block_size)
    size = min(kinds.values())
    groups = [kind for kind, count in kinds.items() for _ in range(math.ceil(count / size))]
    return Layout(page, size, groups, block_size, rules.in_flight_batches(pp))


def layer_kinds(rules: Rules, spec: ModelSpec, stage_layers: int) -> dict[str, int]:
    """A stage's layers by the KV group kind they form, the kinds with no layers left out. Sliding-window
    layers group apart from 0.9. Chunked local attention layers (ChunkedLocalAttentionSpec,
    v1/kv_cache_interface.py:229-244) group apart only where the hybrid manager is on for them: 0.12-0.13
    turn it off unless VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is set (envs.py default "0",
    config/vllm.py), and unify_hybrid_kv_cache_specs then makes them full attention
    (v1/core/kv_cache_utils.py:1129-1180); 0.14 to 0.33 default it to "1"."""
    sliding = round(spec.sliding_layer_count() * stage_layers / spec.layers) if rules.hybrid_groups else 0
    chunked = round(spec.chunked_layer_count() * stage_layers / spec.layers) if rules.chunked_groups else 0
    kinds = {"full": stage_layers - sliding - chunked, "sliding": sliding, "chunked": chunked}
    return {kind: count for kind, count in kinds.items() if count}


def chunked_note(rules: Rules, spec: ModelSpec) -> str | None:
    """The line that says a release's grouping of chunked local attention layers is assumed (not read)."""
    if spec.chunked_attention is None or rules.chunked_groups_read:
        return None
    release = f"{rules.version[0]}.{rules.version[1]}"
    return f"chunked local attention layers in the full-attention KV group at vLLM {release} assumed (not read)"


def in_flight_note(rules: Rules, spec: ModelSpec) -> str | None:
    """The line that says how many batches a sliding or chunked group keeps pages for is assumed."""
    if rules.in_flight_read or not (spec.sliding_window or spec.chunked_attention):
        return None
    release = f"{rules.version[0]}.{rules.version[1]}"
    pages = "sliding/chunked KV pages"
    return f"one batch in flight per request for {pages} at vLLM {release} assumed (0.25 keeps one, 0.33 two)"


def num_blocks(kv_bytes: int, lay: Layout) -> int:
    return max(0, kv_bytes // (lay.page_bytes * lay.group_layers))


def blocks_per_request(spec: ModelSpec, lay: Layout, max_model_len: int, batched_tokens: int) -> int:
    """Pages one request at the max length can need, over all groups: a chunked group holds at most one
    chunk plus the batches in flight (v1/kv_cache_interface.py:232-244 at 0.19.0), a sliding one the
    window less one plus the batches in flight and a page for the window's start (:251-270)."""
    full = math.ceil(max_model_len / lay.block_size)
    in_flight = batched_tokens * lay.in_flight_batches
    window = spec.sliding_window.size if spec.sliding_window else max_model_len
    slide = math.ceil(min(window - 1 + in_flight, max_model_len) / lay.block_size) + 1
    chunk = spec.chunked_attention.size if spec.chunked_attention else max_model_len
    chunked = math.ceil(min(chunk + in_flight, max_model_len) / lay.block_size)
    pages = {"full": full, "sliding": slide, "chunked": chunked}
    return sum(pages[kind] for kind in lay.groups)


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
