"""MXFP4 expert weights as vLLM lays them out for its MoE kernel, by GPU generation (issue 15, term 4)."""

from __future__ import annotations

import math

from gpumem_tui.catalog.schema import GpuSpec, ModelSpec
from gpumem_tui.planner.vllm.loaded import QUANTIZATION as METHODS
from gpumem_tui.planner.vllm.versions import Rules

MXFP4_BLOCK = 32  # elements per uint8 scale (layers/quantization/mxfp4.py:174 at 0.19.0)
QUANTIZATION = METHODS["mxfp4"]  # the method this layout belongs to: experts only, at 4.25 bits
PLAIN_BITS = QUANTIZATION[1]  # what the plain count charges an MXFP4 expert weight: 4-bit values + a scale per 32


def _up(value: int, multiple: int) -> int:
    return math.ceil(value / multiple) * multiple


def hopper_layer_bytes(rules: Rules, spec: ModelSpec, tp: int) -> int:
    """One MoE layer's experts on one rank after the Triton backend converts them on Hopper, by the release's
    rules (`Rules.mxfp4_*`):
    - intermediate / TP rounds up to 64 before the weights are made (fused_moe/oracle/mxfp4.py:376-400 at
      0.19.0; layers/quantization/mxfp4.py create_weights before 0.17);
    - values, transposed to (E, K/2, N), pad to the value layout's tiles (`mxfp4_hopper_value_align`);
    - the swizzled scales, (E, N, K/32), pad N to 2 x 8 warps x 2 x 8 = 256 rows (hopper_scale.py:30-34) and
      K to `mxfp4_scale_k_groups`;
    - the loaded uint8 scales stay on the layer beside them where `mxfp4_keeps_original_scales`;
    - the biases become fp32 (fused_moe/oracle/mxfp4.py:725-726 at 0.19.0)."""
    moe = spec.moe
    assert moe is not None
    experts, hidden = moe.experts, spec.hidden_size
    inter = _up(math.ceil(moe.expert_intermediate_size / tp), 64)
    n_tile, k_tile = rules.mxfp4_hopper_value_align
    values = experts * (
        _up(hidden // 2, k_tile) * _up(2 * inter, n_tile) + _up(inter // 2, k_tile) * _up(hidden, n_tile)
    )
    groups = rules.mxfp4_scale_k_groups
    swizzled_scales = experts * (
        _up(2 * inter, 256) * _up(hidden // MXFP4_BLOCK, groups) + _up(hidden, 256) * _up(inter // MXFP4_BLOCK, groups)
    )
    kept_scales = experts * (2 * inter * (hidden // MXFP4_BLOCK) + hidden * (inter // MXFP4_BLOCK))
    biases = 4 * experts * (2 * inter + hidden) if moe.expert_bias else 0
    return values + swizzled_scales + (kept_scales if rules.mxfp4_keeps_original_scales else 0) + biases


def plain_layer_bytes(spec: ModelSpec, tp: int) -> float:
    """What the plain count charges the same layer's experts: weights and biases at 4.25 bits, split by TP."""
    moe = spec.moe
    assert moe is not None
    bias = 2 * moe.expert_intermediate_size + spec.hidden_size if moe.expert_bias else 0
    per_expert = 3 * spec.hidden_size * moe.expert_intermediate_size + bias
    return moe.experts * per_expert / tp * PLAIN_BITS / 8


def layout_padding(rules: Rules, spec: ModelSpec, gpu: GpuSpec, tp: int, moe_layers: float) -> tuple[int, str | None]:
    """(bytes the kernel layout adds over the plain count on one rank, a note when that is assumed).
    0.19.0 takes the Triton backend on compute capability 9.x-10.x when FlashInfer's kernels do not
    support the device (oracle/mxfp4.py:169-183, 197-206): on Hopper that is the layout above. Blackwell
    takes FlashInfer's TRT-LLM kernel first (its own shuffled layout, sizes rounded to 256, :385-388) and
    older cards Marlin (:379-383): neither is modelled, so they keep the plain count and say so."""
    if spec.moe is None or not moe_layers:
        return 0, None
    if gpu.cc_major != 9:
        generation = f"compute capability {gpu.compute_capability}" if gpu.cc_major else "an unknown generation"
        layout = "its kernel's layout is not modelled"
        return 0, f"MXFP4 experts on {gpu.key} ({generation}) at the plain {PLAIN_BITS} bits assumed ({layout})"
    padding = round(moe_layers * (hopper_layer_bytes(rules, spec, tp) - plain_layer_bytes(spec, tp)))
    if rules.mxfp4_layout_read:
        return padding, None
    release = f"{rules.version[0]}.{rules.version[1]}"
    like = "0.12" if rules.version < (0, 12, 0) else "0.25"
    return padding, f"MXFP4 Hopper layout of vLLM {like} assumed for {release} (not read)"
