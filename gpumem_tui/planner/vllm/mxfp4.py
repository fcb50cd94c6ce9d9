"""MXFP4 expert weights as vLLM lays them out for its MoE kernel, by GPU generation (issue 15, term 4)."""

from __future__ import annotations

import math

from gpumem_tui.catalog.schema import GpuSpec, ModelSpec
from gpumem_tui.planner.vllm.loaded import QUANTIZATION as METHODS
from gpumem_tui.planner.vllm.versions import Rules

READ = ((0, 12), (0, 25))  # releases whose Hopper MXFP4 layout was read, first and last of a run ...
READ_ALSO = ((0, 33),)  # ... and single ones read beyond it
MXFP4_BLOCK = 32  # elements per uint8 scale (layers/quantization/mxfp4.py:174 at 0.19.0)
QUANTIZATION = METHODS["mxfp4"]  # the method this layout belongs to: experts only, at 4.25 bits
PLAIN_BITS = QUANTIZATION[1]  # what the plain count charges an MXFP4 expert weight: 4-bit values + a scale per 32


def _up(value: int, multiple: int) -> int:
    return math.ceil(value / multiple) * multiple


def _value_tiles(release: tuple[int, int]) -> tuple[int, int]:
    """(N, K/2) multiples the Hopper value layout pads the packed values to. 0.17-0.21 pad both dims to
    64 before swizzling (hopper_value.py:130-134 at 0.19.0); the other read releases pad only to the mma
    packing, k_tile x warp_tile x threads x scott_trick x contig per dim: 1x2x4x2x1 = 16 on N and
    4x2x4x1x1 = 32 on K/2 (hopper_value.py swizzle_data at 0.16.0 and 0.22.0)."""
    return (64, 64) if (0, 17) <= release <= (0, 21) else (16, 32)


def hopper_layer_bytes(spec: ModelSpec, tp: int, release: tuple[int, int] = (0, 19)) -> int:
    """One MoE layer's experts on one rank after the Triton backend converts them on Hopper:
    - intermediate / TP rounds up to 64 before the weights are made (fused_moe/oracle/mxfp4.py:376-400 at
      0.19.0; layers/quantization/mxfp4.py create_weights before 0.17);
    - values, transposed to (E, K/2, N), pad to the value layout's tiles (`_value_tiles`);
    - the swizzled scales, (E, N, K/32), pad N to 2 x 8 warps x 2 x 8 = 256 rows and K to 2
      (hopper_scale.py:30-34), to 4 from 0.33 (mxfp4_utils.py: 'pad K (num scale groups) to 0 mod 4');
    - the loaded uint8 scales stay on the layer beside them before 0.25: the Triton backends keep them out
      of `replace_parameter` (layers/quantization/mxfp4.py:299-311 at 0.19.0); 0.25 deletes them;
    - the biases become fp32 (fused_moe/oracle/mxfp4.py:725-726 at 0.19.0)."""
    moe = spec.moe
    assert moe is not None
    experts, hidden = moe.experts, spec.hidden_size
    inter = _up(math.ceil(moe.expert_intermediate_size / tp), 64)
    n_tile, k_tile = _value_tiles(release)
    values = experts * (
        _up(hidden // 2, k_tile) * _up(2 * inter, n_tile) + _up(inter // 2, k_tile) * _up(hidden, n_tile)
    )
    groups = 4 if release >= (0, 33) else 2
    swizzled_scales = experts * (
        _up(2 * inter, 256) * _up(hidden // MXFP4_BLOCK, groups) + _up(hidden, 256) * _up(inter // MXFP4_BLOCK, groups)
    )
    kept_scales = experts * (2 * inter * (hidden // MXFP4_BLOCK) + hidden * (inter // MXFP4_BLOCK))
    biases = 4 * experts * (2 * inter + hidden) if moe.expert_bias else 0
    return values + swizzled_scales + (kept_scales if release < (0, 25) else 0) + biases


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
    release = rules.version[:2]
    read = READ[0] <= release <= READ[1] or release in READ_ALSO
    # an unread release takes the nearest read one below it (the first read one when older)
    like = release if read else max(READ[0], min(release, READ[1]))
    padding = round(moe_layers * (hopper_layer_bytes(spec, tp, like) - plain_layer_bytes(spec, tp)))
    if read:
        return padding, None
    return padding, f"MXFP4 Hopper layout of vLLM {like[0]}.{like[1]} assumed for {release[0]}.{release[1]} (not read)"
