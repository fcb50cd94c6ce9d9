"""The fused-MoE workspace vLLM keeps for the worker's life (issue 15, term 2).

Read at 0.19.0 (line numbers): the modular kernel takes its intermediate caches from the worker's
workspace manager (fused_moe/modular_kernel.py:1009-1070), which grows to the largest request and never
shrinks (v1/worker/workspace.py:117-192). The first MoE layer of the profile's dummy run sizes it for all
batched tokens, so it is still allocated while the sampler runs and counts in the activation peak.
"""

from __future__ import annotations

from gpumem_tui.catalog.schema import GpuSpec, ModelSpec
from gpumem_tui.planner.vllm.versions import Rules

ALIGN = 256  # each simultaneous buffer starts at a multiple of 256 bytes (workspace.py:101-103)
PAID_BY = ("", "none", "fp8")
"""Quantization methods whose MoE runs on the workspace kernels sized here: none (16-bit) and FP8."""


def _aligned(size: int) -> int:
    return -(-size // ALIGN) * ALIGN


def triton_workspace_bytes(spec: ModelSpec, tokens: int, width: int, tp: int, chunk: int | None = None) -> int:
    """TritonExperts (fused_moe/fused_moe.py:1976-1991): tokens x top-k x max(I/tp, H) for the activation's
    output (reused for the second GEMM's output and the layer's output) beside tokens x top-k x max(2I/tp, H)
    for the first GEMM's, in the activation dtype (modular_kernel.py:789-793, 1033-1067). Until 0.15 a
    batch past `chunk` tokens runs in chunks, and the output (tokens x H) gets its own buffer."""
    assert spec.moe is not None
    inter, hidden, topk = spec.moe.expert_intermediate_size // tp, spec.hidden_size, spec.moe.experts_per_token
    rows = min(tokens, chunk) if chunk else tokens
    first = rows * topk * max(inter, hidden) * width
    second = rows * topk * max(2 * inter, hidden) * width
    output = tokens * hidden * width if rows < tokens else 0
    return _aligned(first) + _aligned(second) + _aligned(output)


def flashinfer_workspace_bytes(spec: ModelSpec, tokens: int, width: int) -> int:
    """FlashInferExperts (flashinfer_cutlass_moe.py:206-240 at 0.20.0): one tokens x H buffer; the
    kernel's own scratch is FlashInfer's and not kept."""
    return _aligned(tokens * spec.hidden_size * width)


def _method(quantization: str | None, spec: ModelSpec) -> str:
    return (quantization or spec.checkpoint_format or "").lower().replace("-", "_")


def moe_workspace_bytes(
    rules: Rules, spec: ModelSpec, gpu: GpuSpec, quantization: str | None, tokens: int, width: int, tp: int
) -> int:
    """The workspace one GPU keeps for MoE layers: unquantized or FP8 experts on the release's default
    kernel (oracle/unquantized.py:142-247; FP8 taken as the Triton kernel, see `moe_workspace_note`).
    MXFP4 on Hopper runs a monolithic kernel that keeps none (gpt_oss_triton_kernels_moe.py:867); other
    quantized experts (Marlin and the like) are not modelled and count none."""
    if spec.moe is None or _method(quantization, spec) not in PAID_BY:
        return 0
    kernel = rules.moe_kernel(gpu.compute_capability)
    if kernel == "triton":
        return triton_workspace_bytes(spec, tokens, width, tp, rules.moe_chunk_tokens)
    if kernel == "flashinfer":
        return flashinfer_workspace_bytes(spec, tokens, width)
    return 0


def moe_workspace_note(rules: Rules, spec: ModelSpec, gpu: GpuSpec, quantization: str | None) -> str | None:
    """The line that says the MoE workspace figure is assumed, where the source read does not decide it."""
    if spec.moe is None or rules.moe_kernel(gpu.compute_capability) is None:
        return None
    method = _method(quantization, spec)
    if method == "fp8":
        # vLLM picks Triton for block-scaled FP8 on Hopper; per-tensor FP8 may run FlashInfer or CUTLASS
        # kernels with other workspaces (fused_moe/oracle/fp8.py:57-102 at 0.19.0).
        return "MoE workspace of the Triton kernel assumed for FP8 experts (per-tensor FP8 may run another)"
    if method == "mxfp4":
        if gpu.compute_capability == "9.0":
            return None
        return f"no MoE workspace assumed for MXFP4 experts on {gpu.key} (only Hopper's kernel was read)"
    if method not in PAID_BY:
        return f"no MoE workspace counted for {method} experts (that kernel's workspace is not modelled)"
    if rules.moe_kernel(gpu.compute_capability) == "flashinfer" and gpu.compute_capability != "9.0":
        return f"MoE workspace of FlashInfer's CUTLASS kernel assumed on {gpu.key} (TRT-LLM's may run instead)"
    return None
