"""Weight bytes per format, in total and per GPU of a tensor-parallel split."""

from __future__ import annotations

import math

from gpumem_tui.catalog.schema import FormatSpec, ModelSpec
from gpumem_tui.planner.params import ParamCounts, count_params

SIXTEEN_BIT = 2


def format_bytes(count: int, fmt: FormatSpec) -> int:
    """Bytes for `count` values in this format (scales included in bits_per_param)."""
    return math.ceil(count * fmt.bits_per_param / 8)


def quantized_count(params: ParamCounts, fmt: FormatSpec) -> int:
    """How many parameters take the format; the rest stay 16-bit."""
    if fmt.scope == "experts":
        return params.experts
    if fmt.scope == "linear":
        return params.linear
    return params.total


def weights_bytes(params: ParamCounts, fmt: FormatSpec) -> int:
    """All weight bytes of one copy of the model in this format."""
    quantized = quantized_count(params, fmt)
    return format_bytes(quantized, fmt) + (params.total - quantized) * SIXTEEN_BIT


def weights_bytes_per_gpu(spec: ModelSpec, fmt: FormatSpec, tp: int) -> int:
    """One rank's weights: sharded tensors divide by the split, norms and routers are replicated,
    and K/V projections stop shrinking once the split exceeds the KV heads (each rank keeps one head)."""
    params = count_params(spec)
    total = weights_bytes(params, fmt)
    if tp == 1:
        return total
    per_param = total / params.total
    replicated = params.norms + params.router
    kv_heads_per_rank = max(1, spec.kv_heads // tp) if spec.mla is None else None
    kv_extra = 0
    if kv_heads_per_rank is not None and spec.kv_heads < tp:
        kv_extra = params.kv_projection // spec.kv_heads - params.kv_projection // tp
    sharded = params.total - replicated
    return math.ceil((sharded / tp + replicated + kv_extra) * per_param)
