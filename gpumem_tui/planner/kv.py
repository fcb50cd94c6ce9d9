"""KV-cache bytes: per token (GQA, MHA, MLA latent), per sequence (sliding-window layers capped), per GPU."""

from __future__ import annotations

from gpumem_tui.catalog.schema import ModelSpec
from gpumem_tui.planner.dtypes import kv_dtype_bytes


def kv_heads_per_gpu(spec: ModelSpec, tp: int, kv_heads: int | None = None) -> int:
    """KV heads one rank holds: a share of them, or one replicated head when the split exceeds them."""
    heads = kv_heads or spec.kv_heads
    return max(1, heads // tp)


def layer_bytes_per_token(spec: ModelSpec, kv_dtype: str, tp: int = 1, kv_heads: int | None = None) -> int:
    """Bytes one layer caches per token on one rank. MLA caches one latent (no K/V factor 2),
    replicated on every rank; other attention caches K and V for this rank's heads."""
    width = kv_dtype_bytes(kv_dtype)
    if spec.mla is not None:
        return (spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim) * width
    return 2 * kv_heads_per_gpu(spec, tp, kv_heads) * spec.head_size * width


def kv_bytes_per_token(spec: ModelSpec, kv_dtype: str = "auto", kv_heads: int | None = None) -> int:
    """The model's KV bytes per token with every layer counted (the seed's formula), unsplit."""
    return spec.layers * layer_bytes_per_token(spec, kv_dtype, 1, kv_heads)


def sequence_bytes_per_gpu(
    spec: ModelSpec, context: int, kv_dtype: str, tp: int = 1, kv_heads: int | None = None
) -> int:
    """One conversation of `context` tokens on one rank; sliding-window layers stop at the window."""
    per_layer = layer_bytes_per_token(spec, kv_dtype, tp, kv_heads)
    sliding = spec.sliding_layer_count()
    full = spec.layers - sliding
    window = spec.sliding_window.size if spec.sliding_window else 0
    return per_layer * (full * context + sliding * min(context, window))


def kv_bytes_total(
    spec: ModelSpec, users: int, context: int, kv_dtype: str, tp: int = 1, kv_heads: int | None = None
) -> int:
    """`users` conversations at `context` tokens across all `tp` ranks (replicated heads counted)."""
    return users * tp * sequence_bytes_per_gpu(spec, context, kv_dtype, tp, kv_heads)
