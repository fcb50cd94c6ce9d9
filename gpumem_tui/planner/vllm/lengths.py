"""The longest context vLLM starts with: its own rule, which the plain plan follows too."""

from __future__ import annotations

from gpumem_tui.catalog.schema import ModelSpec

LONG_LEN_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


def longest_accepted(spec: ModelSpec) -> int | None:
    """vLLM's "derived max_model_len", the longest --max-model-len it starts with unless
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (config/model.py `_get_and_verify_max_len` at 0.19.0):
    max_position_embeddings times the RoPE scaling factor (linear, dynamic, ...; none for llama3, su and
    longrope; yarn's from original_max_position_embeddings), except Gemma 3's, whose maximum already
    counts it. None when the catalog does not know the model's maximum."""
    if not spec.max_context:
        return None
    scaling = spec.rope_scaling
    if "Gemma3" in spec.architecture or (scaling and scaling.type in ("su", "longrope", "llama3")):
        return spec.max_context
    if scaling is None:
        return int(spec.max_context * spec.rope_caches[0])
    original = scaling.original_max_position_embeddings if scaling.type == "yarn" else None
    return int((original or spec.max_context) * scaling.factor)
