"""Bytes one token of SGLang's KV pool takes on one GPU (`cell_size`), and the hybrid SWA split.

Reference section 2 (model_runner.py `profile_max_num_token`): MHA/GQA caches K and V for the heads of
this attention-TP rank (one replicated head when the heads are fewer than the ranks); MLA caches one
latent of kv_lora_rank + qk_rope_head_dim per layer, on every rank whole."""

from __future__ import annotations

from dataclasses import dataclass

from gpumem_tui.catalog.schema import ModelSpec
from gpumem_tui.planner.dtypes import kv_dtype_bytes
from gpumem_tui.planner.sglang.versions import Rules

SWA_FULL_TOKENS_RATIO = 0.8
"""`--swa-full-tokens-ratio`'s default: SWA layers get 0.8 tokens for each full-layer token."""


@dataclass(frozen=True)
class Cell:
    """One token's bytes on one rank, with how they were made up."""

    bytes: int
    layers: int
    per_layer: int
    """Bytes one layer caches per token (K and V together for MHA, the latent for MLA)."""
    mla: bool
    heads: int
    """KV heads this rank stores (1 for MLA's latent)."""


def attention_tp(tp: int, dp: int, dp_attention: bool) -> int:
    """Ranks the attention heads are split over: tp / dp under DP attention, else tp (also where dp does not
    divide tp, which SGLang refuses: risks.py says so)."""
    return tp // dp if dp_attention and dp > 1 and tp % dp == 0 else tp


def cell(spec: ModelSpec, kv_dtype: str, rules: Rules, attn_tp: int, layers: int | None = None) -> Cell:
    """`layers`: this pipeline stage's layers (all by default)."""
    width = kv_dtype_bytes(kv_dtype)
    count = layers or spec.layers
    if spec.mla is not None and rules.mla_default:
        per_layer = (spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim) * width
        return Cell(per_layer * count, count, per_layer, True, 1)
    head_dim = spec.head_size
    kv_heads = spec.kv_heads
    if spec.mla is not None:  # 0.3.x without --enable-mla: a full MHA cache of the query-key width
        kv_heads, head_dim = spec.attention_heads, spec.mla.qk_nope_head_dim + spec.mla.qk_rope_head_dim
    heads = max(1, kv_heads // attn_tp)
    per_layer = heads * head_dim * 2 * width
    return Cell(per_layer * count, count, per_layer, False, heads)


def hybrid_layers(spec: ModelSpec, rules: Rules) -> tuple[int, int] | None:
    """(SWA layers, full layers) of a model SGLang pools as hybrid SWA (sliding-window or chunked
    attention with some full layers, from 0.4.9); None otherwise."""
    if not rules.hybrid_swa:
        return None
    window, chunked = spec.sliding_window, spec.chunked_attention
    every = window.global_every if window else (chunked.full_every if chunked else None)
    if every is None:
        return None
    full = spec.layers // every
    return spec.layers - full, full


def hybrid_split(tokens: int, swa_layers: int, full_layers: int) -> tuple[int, int]:
    """(full tokens, SWA tokens) from the profiled count: the same bytes spread so that each SWA layer
    holds 0.8 tokens per full-layer token (`set_num_token_hybrid`, v0.5.6 model_runner.py:1526-1606)."""
    total = tokens * (swa_layers + full_layers)
    full = int(total / (SWA_FULL_TOKENS_RATIO * swa_layers + full_layers))
    return full, int(full * SWA_FULL_TOKENS_RATIO)
