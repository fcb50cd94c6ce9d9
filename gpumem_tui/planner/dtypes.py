"""Bytes per element of KV-cache dtypes, as the serving engines name them."""

from __future__ import annotations

KV_DTYPE_BYTES = {
    "auto": 2,
    "bf16": 2,
    "bfloat16": 2,
    "fp16": 2,
    "float16": 2,
    "half": 2,
    "fp32": 4,
    "float32": 4,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
    "int8": 1,
}


class PlanInputError(ValueError):
    """A plan request that cannot be computed (bad split, unknown dtype, negative count)."""


def kv_dtype_bytes(name: str) -> int:
    """Bytes per cached element; `auto` is the 16-bit serving dtype."""
    try:
        return KV_DTYPE_BYTES[name.lower()]
    except KeyError:
        known = ", ".join(sorted(KV_DTYPE_BYTES))
        raise PlanInputError(f"unknown KV dtype {name!r}; use one of {known}") from None
