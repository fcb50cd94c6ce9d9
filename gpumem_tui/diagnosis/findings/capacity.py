"""What more capacity would buy: conversations one more GPU, or an FP8 KV cache, would add to a pool, predicted
by the rules the plan was sized with (vLLM's or SGLang's)."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import EnginePlan, planned, predicted, sized_with
from gpumem_tui.planner.parallel import valid_splits
from gpumem_tui.planner.sglang import SglangSettings
from gpumem_tui.planner.sglang import predict as sglang_predict
from gpumem_tui.planner.vllm import EngineSettings

FP8 = {"vllm": "fp8", "sglang": "fp8_e4m3"}
"""An FP8 KV cache, as each engine's --kv-cache-dtype names it."""


def more_conversations(plan: EnginePlan, pool_tokens: int, per_request: int | None) -> list[str]:
    """Sentences like 'One more GPU (tensor parallel 1 -> 2) would hold about 140 more conversations of
    3,075 tokens.'; empty when the plan cannot be re-predicted."""
    settings, p = sized_with(plan), planned(plan)
    if settings is None or p is None:
        return []
    size = per_request or p.context_len
    base = p.pool_tokens
    out = []
    bigger = next((n for n in valid_splits(settings.model, limit=64) if n > settings.tp), None)
    if bigger is not None:
        tokens = _scaled(_pool(settings, tp=bigger), base, pool_tokens)
        extra = bigger - settings.tp
        gpus = "One more GPU" if extra == 1 else f"{extra} more GPUs"
        out.append(
            f"{gpus} (tensor parallel {settings.tp} -> {bigger}) would hold about "
            f"{max(0, tokens - pool_tokens) // size:,} more conversations of {size:,} tokens."
        )
    if not settings.kv_cache_dtype.lower().startswith("fp8"):
        fp8 = FP8["sglang" if isinstance(settings, SglangSettings) else "vllm"]
        tokens = _scaled(_pool(settings, kv_cache_dtype=fp8), base, pool_tokens)
        out.append(f"An FP8 KV cache would hold about {max(0, tokens - pool_tokens) // size:,} more.")
    return out


def _pool(settings: EngineSettings | SglangSettings, **update: object) -> int:
    """The pool in tokens the same rules predict with `update` to the settings."""
    if isinstance(settings, SglangSettings):
        return sglang_predict(settings.model_copy(update=update)).kv_cache_tokens
    return predicted(settings.model_copy(update=update)).kv_cache_tokens


def _scaled(predicted: int, predicted_base: int, measured_base: int) -> int:
    """A predicted pool, scaled by how far the engine's real pool is from the prediction for its settings."""
    if predicted_base <= 0:
        return predicted
    return round(predicted * measured_base / predicted_base)
