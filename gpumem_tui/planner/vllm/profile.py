"""What vLLM's profile run measures besides weights: activation peak, non-torch memory, CUDA graphs."""

from __future__ import annotations

from gpumem_tui.catalog.schema import GpuSpec, ModelSpec
from gpumem_tui.planner.vllm.versions import Rules
from gpumem_tui.units import GIB, MIB

# CUDA keeps this much of what nvidia-smi reports out of the process's view (H100: 81,559 MiB -> 79.19 GiB).
DRIVER_RESERVED_BYTES = 470 * MIB
# Hidden-state-sized tensors alive at the profile's peak: residual, normed input, attention in/out, buffers.
HIDDEN_COPIES = 6
NON_TORCH_SINGLE = {"v0": round(0.35 * GIB), "v1": round(0.25 * GIB)}
NON_TORCH_TP = round(2.1 * GIB)  # NCCL and custom all-reduce buffers per GPU at TP >= 2 over NVLink/NVSwitch
# PCIe-only cards at TP 2 (RTX 4090, L4, L40S on 0.19, as issue 15 reports; no such log is in tests/data).
NON_TORCH_TP_PCIE = round(0.25 * GIB)
NON_TORCH_PP = round(0.07 * GIB)
CUDAGRAPH_PER_LAYER = round(0.024 * GIB)  # measured 0.5-1.8 GiB on H100 for the default capture sizes


def torch_total_bytes(gpu: GpuSpec, capacity_bytes: int | None = None) -> int:
    """`torch.cuda.mem_get_info()[1]`: observed where the catalog has it, else the reported total less
    the driver's share."""
    if capacity_bytes:
        return capacity_bytes
    if gpu.torch_total_gib:
        return round(gpu.torch_total_gib * GIB)
    return gpu.capacity_bytes - (DRIVER_RESERVED_BYTES if gpu.total_mib else 0)


def forward_bytes(spec: ModelSpec, tokens: int, width: int, tp: int) -> int:
    """One layer's widest moment at `tokens` tokens: the gate/up output, the activation, and hidden copies."""
    mlp = spec.moe.expert_intermediate_size * spec.moe.experts_per_token if spec.moe else spec.intermediate_size
    return tokens * width * (3 * mlp // tp + 3 * spec.hidden_size)


def sampler_bytes(rules: Rules, spec: ModelSpec, tokens: int, seqs: int, width: int) -> int:
    """The last stage's peak before 0.17 and for fp32 serving: hidden copies for the batch plus fp32 logits
    work for one row per request (from 0.17, 16-bit: planner/vllm/sampler.py)."""
    rows = min(seqs, tokens)
    return tokens * spec.hidden_size * width * HIDDEN_COPIES + rows * spec.vocab_size * rules.sampler_bytes_per_logit


def activation_peak(
    rules: Rules,
    spec: ModelSpec,
    tokens: int,
    seqs: int,
    width: int,
    tp: int,
    last_stage: bool = True,
    sampler: int | None = None,
    kept: int = 0,
    forward: int | None = None,
) -> int:
    """The torch peak increase of the profile run: the larger of the forward pass and the sampler phase
    (only the last pipeline stage samples). v0 samples 4-byte logits for its `max_num_seqs` rows.
    `sampler` is the sampler phase where the caller sized it (planner/vllm/sampler.py), today's estimate
    otherwise; `kept` is what the forward pass leaves allocated through it (the MoE workspace); `forward` is
    the forward pass where the caller sized it (planner/vllm/forward.py), `forward_bytes` otherwise."""
    if forward is None:
        forward = forward_bytes(spec, tokens, width, tp)
    if not last_stage:
        return forward
    if not rules.v1:
        return max(forward, min(seqs, tokens) * spec.vocab_size * 12 + tokens * spec.hidden_size * width * 6)
    if sampler is None:
        sampler = sampler_bytes(rules, spec, tokens, seqs, width)
    return max(forward, sampler + kept)


def non_torch_bytes(rules: Rules, tp: int, pp: int, interconnect: str | None = None) -> int:
    """CUDA context growth, cuBLAS workspaces and, with TP, NCCL / custom all-reduce buffers. Those
    buffers depend on the links: vLLM sets up its custom all-reduce by whether the GPUs are fully
    NVLink-connected (distributed/device_communicators/custom_all_reduce.py:152-193 at 0.19.0), and
    PCIe-only cards show about 0.25 GiB. An unknown interconnect keeps the NVLink figure (see
    `non_torch_note`)."""
    if tp > 1:
        return NON_TORCH_TP_PCIE if interconnect == "pcie" else NON_TORCH_TP
    if pp > 1:
        return NON_TORCH_PP
    return NON_TORCH_SINGLE["v1" if rules.v1 else "v0"]


def non_torch_note(gpu: GpuSpec, tp: int) -> str | None:
    """The line that says the TP non-torch figure is assumed, when the catalog does not know the links."""
    if tp > 1 and gpu.interconnect is None:
        links = f"{gpu.key}'s interconnect, NVLink or PCIe, is not in the catalog"
        return f"non-torch {NON_TORCH_TP / GIB:.2f} GiB at TP {tp} assumed ({links})"
    return None


def cudagraph_bytes(spec: ModelSpec, pp: int, enforce_eager: bool) -> int:
    """Memory the captured graphs keep (their private pools), roughly per layer captured."""
    return 0 if enforce_eager else CUDAGRAPH_PER_LAYER * -(-spec.layers // pp)
