"""Tensor-parallel splits: which are valid, and why the others are not."""

from __future__ import annotations

from gpumem_tui.catalog.schema import ModelSpec

SPLITS = (1, 2, 4, 8)


def split_problem(spec: ModelSpec, tp: int, kv_heads: int | None = None) -> str | None:
    """None when `tp` GPUs can share the model's heads evenly, else the reason in words."""
    if tp < 1:
        return f"a split needs at least 1 GPU, not {tp}"
    heads = spec.attention_heads
    if heads % tp:
        return (
            f"{spec.id} has {heads} attention heads, which do not divide evenly over {tp} GPUs; "
            f"valid splits: {', '.join(str(n) for n in valid_splits(spec, kv_heads))}"
        )
    kv = kv_heads or spec.kv_heads
    if spec.mla is None and tp > kv and tp % kv:
        return (
            f"{spec.id} has {kv} KV heads: a split of {tp} can neither share them out "
            f"nor replicate each on a whole number of GPUs"
        )
    if spec.mla is None and tp <= kv and kv % tp:
        return f"{spec.id} has {kv} KV heads, which do not divide evenly over {tp} GPUs"
    return None


def valid_splits(spec: ModelSpec, kv_heads: int | None = None, limit: int = 8) -> list[int]:
    """Every split from 1 to `limit` GPUs that the heads allow."""
    return [n for n in range(1, limit + 1) if _valid(spec, n, kv_heads)]


def _valid(spec: ModelSpec, tp: int, kv_heads: int | None) -> bool:
    heads, kv = spec.attention_heads, kv_heads or spec.kv_heads
    if heads % tp:
        return False
    if spec.mla is not None:
        return True
    return (tp % kv == 0) if tp > kv else (kv % tp == 0)
