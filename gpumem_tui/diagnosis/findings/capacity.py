"""What more capacity would buy: conversations one more GPU, or an FP8 KV cache, would add to a pool."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import EnginePlan, predicted
from gpumem_tui.planner.parallel import valid_splits


def more_conversations(plan: EnginePlan, pool_tokens: int, per_request: int | None) -> list[str]:
    """Sentences like 'One more GPU (tensor parallel 1 -> 2) would hold about 140 more conversations of
    3,075 tokens.'; empty when the plan cannot be re-predicted."""
    settings = plan.settings
    if settings is None or plan.prediction is None:
        return []
    size = per_request or plan.prediction.max_model_len
    base = plan.prediction.kv_cache_tokens
    out = []
    bigger = next((n for n in valid_splits(settings.model, limit=64) if n > settings.tp), None)
    if bigger is not None:
        tokens = _scaled(predicted(settings.model_copy(update={"tp": bigger})).kv_cache_tokens, base, pool_tokens)
        extra = bigger - settings.tp
        gpus = "One more GPU" if extra == 1 else f"{extra} more GPUs"
        out.append(
            f"{gpus} (tensor parallel {settings.tp} -> {bigger}) would hold about "
            f"{max(0, tokens - pool_tokens) // size:,} more conversations of {size:,} tokens."
        )
    if not settings.kv_cache_dtype.lower().startswith("fp8"):
        tokens = _scaled(
            predicted(settings.model_copy(update={"kv_cache_dtype": "fp8"})).kv_cache_tokens, base, pool_tokens
        )
        out.append(f"An FP8 KV cache would hold about {max(0, tokens - pool_tokens) // size:,} more.")
    return out


def _scaled(predicted: int, predicted_base: int, measured_base: int) -> int:
    """A predicted pool, scaled by how far the engine's real pool is from the prediction for its settings."""
    if predicted_base <= 0:
        return predicted
    return round(predicted * measured_base / predicted_base)
