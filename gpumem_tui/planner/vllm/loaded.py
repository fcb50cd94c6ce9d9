"""Weights as vLLM loads them on one rank: dtype or quantization, TP shards, PP stages, rope caches."""

from __future__ import annotations

import math

from gpumem_tui.catalog.schema import ModelSpec
from gpumem_tui.planner.dtypes import PlanInputError
from gpumem_tui.planner.params import count_params
from gpumem_tui.planner.vllm.vision import rope_cache_bytes

# Bits per quantized weight, scales included, and which weights the method converts. Embeddings and
# the LM head stay in the model dtype for all of them (vLLM quantizes linear layers only). The 4-bit group
# methods are sized by `group_bits` from the checkpoint's group size; these are their bits at 128.
QUANTIZATION = {
    "fp8": ("linear", 8.0),
    "w8a8": ("linear", 8.0),
    "int8": ("linear", 8.0),
    "w4a16": ("linear", 4.125),
    "gptq": ("linear", 4.125),
    "gptq_marlin": ("linear", 4.125),
    "awq": ("linear", 4.15625),
    "awq_marlin": ("linear", 4.15625),
    "mxfp4": ("experts", 4.25),
}
ZERO_POINT_BITS = {"w4a16": 0, "gptq": 0, "gptq_marlin": 0, "awq": 4, "awq_marlin": 4}
"""The 4-bit group methods: packed 4-bit values, one fp16 scale per group of input rows in every output
column, and these bits of zero point per group beside it. AWQ keeps its packed 4-bit zero points (awq.py:
207-248 at 0.19.0, and awq_marlin repacks them: kernels/linear/mixed_precision/marlin.py); a GPTQ checkpoint
runs as gptq_marlin, which takes symmetric weights only (gptq_marlin.py:97-100) and frees the zero points
as it repacks (`zero_points=False`); compressed-tensors' W4A16 is symmetric too."""
DEFAULT_GROUP = 128
"""The group size where a checkpoint's config does not say (a name read as -AWQ or -GPTQ): AutoAWQ's and
AutoGPTQ's default."""


def group_bits(method: str, group: int | None) -> float:
    """Bits per weight of a 4-bit group method: 4 + (16-bit scale + zero point) / group; per output channel
    (group -1) one scale per column of a layer thousands of rows deep, taken as none."""
    size = group or DEFAULT_GROUP
    return 4 + ((16 + ZERO_POINT_BITS[method]) / size if size > 0 else 0.0)


# A weight format of the catalog as vLLM's quantization method (16-bit formats load natively; nf4 is
# bitsandbytes' 4-bit, sized like w4a16).
FORMAT_TO_QUANTIZATION = {
    "fp8": "fp8",
    "int8": "w8a8",
    "int4": "w4a16",
    "int4-raw": "w4a16",
    "nf4": "w4a16",
    "mxfp4": "mxfp4",
}
DTYPE_BYTES = {"auto": 2, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2, "float32": 4, "fp32": 4}


def dtype_bytes(dtype: str) -> int:
    """`auto` serves fp32 checkpoints in 16-bit, as vLLM does."""
    name = dtype.lower().removeprefix("torch.")
    if name not in DTYPE_BYTES:
        raise PlanInputError(f"unknown dtype {dtype!r}; use auto, bfloat16, float16 or float32")
    return DTYPE_BYTES[name]


def quantization_of(name: str | None, spec: ModelSpec) -> tuple[str, float] | None:
    """The method's scope and bits; None for plain dtype weights. Defaults to the checkpoint's own format,
    a vLLM method (awq, gptq: what its config.json's quant_method names) or a catalog format (int4)."""
    given = name if name is not None else spec.checkpoint_format
    key = _key(given or "")
    if key in ("", "none", *(_key(f) for f in DTYPE_BYTES)):
        return None
    key = {_key(f): m for f, m in FORMAT_TO_QUANTIZATION.items()}.get(key, key)
    if key not in QUANTIZATION:
        what = f"quantization {name!r}" if name is not None else f"{spec.id}'s checkpoint format {given!r}"
        raise PlanInputError(f"unknown {what}; use one of {', '.join(sorted(QUANTIZATION))}")
    if key in ZERO_POINT_BITS:
        return QUANTIZATION[key][0], group_bits(key, spec.quant_group_size)
    return QUANTIZATION[key]


def _key(name: str) -> str:
    return name.lower().replace("-", "_")


def padded_vocab(spec: ModelSpec, tp: int) -> int:
    """Vocab rows one rank holds: padded to a multiple of 64, then split."""
    padded = math.ceil(spec.vocab_size / 64) * 64
    return math.ceil(padded / tp)


def loaded_weight_bytes(
    spec: ModelSpec, width: int, quantization: tuple[str, float] | None, tp: int = 1, stage: int = 0, stages: int = 1
) -> int:
    """One rank's weights: its share of the layers of its pipeline stage, the embedding on the first
    stage, the LM head on the last, norms and routers whole, K/V heads replicated past their count."""
    params = count_params(spec)
    share = stage_layers(spec.layers, stage, stages) / spec.layers
    kv_extra = 0
    if spec.mla is None and tp > spec.kv_heads:
        kv_extra = params.kv_projection // spec.kv_heads - params.kv_projection // tp
    linear = (params.attention + params.dense_mlp + params.shared_experts) / tp + kv_extra
    experts = (params.experts + params.expert_biases) / tp
    scope, bits = quantization or ("none", width * 8)
    quantized = {"linear": linear + experts, "experts": experts, "none": 0.0}[scope]
    plain = linear + experts - quantized + params.norms + params.router
    layer_bytes = (quantized * bits / 8 + plain * width) * share
    vocab = padded_vocab(spec, tp) * spec.hidden_size * width
    ends = (vocab if stage == 0 else 0) + (
        vocab if stage == stages - 1 and not (spec.tie_word_embeddings and stages == 1) else 0
    )
    return math.ceil(layer_bytes + ends + rope_cache_bytes(spec, width))


def stage_moe_layers(spec: ModelSpec, stage: int, stages: int) -> float:
    """The MoE layers of one pipeline stage, in the same proportional share the weights use."""
    return spec.moe_layer_count() * stage_layers(spec.layers, stage, stages) / spec.layers


def stage_layers(layers: int, stage: int, stages: int) -> int:
    """vLLM's even partition; the remainder goes to the last stages."""
    base, extra = divmod(layers, stages)
    return base + (1 if stage >= stages - extra else 0)
