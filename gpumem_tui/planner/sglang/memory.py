"""Free memory before and after SGLang loads the weights, where no log has measured it.

SGLang's `total` is what `torch.cuda.mem_get_info()` calls free once torch.distributed is up: what CUDA
reports to the process (planner/vllm/profile.torch_total_bytes, the one rule of it) less the CUDA context
and, with TP, NCCL's and the custom all-reduce's buffers. Those two are fitted on the calibration logs,
not read from the source, and a prediction says so."""

from __future__ import annotations

from gpumem_tui.catalog.schema import GpuSpec, ModelSpec
from gpumem_tui.planner.vllm.loaded import loaded_weight_bytes, quantization_of
from gpumem_tui.planner.vllm.profile import torch_total_bytes
from gpumem_tui.units import GIB, gib

CUDA_CONTEXT_BYTES = round(0.35 * GIB)
"""One process's CUDA context and torch's start: 79.19 GiB reported on an H100, 78.81 GB (GiB) free at
`Load weight begin` in the Llama-3.1-8B docs run; 47.27 on a 48 GB card; 191.33 on an MI300X."""
TP_NVLINK_BYTES = round(1.40 * GIB)
"""NCCL and custom all-reduce buffers at TP > 1 over NVLink: the Grok-2 run on 8 x H100 logs
`Init torch distributed ends. mem usage=1.25 GB` and 77.43 free of 79.19."""
TP_PCIE_BYTES = round(0.10 * GIB)
"""The same over PCIe: the QwQ-32B run on 4 x L4 logs `mem usage=0.13 GB`."""


def free_before_weights(gpu: GpuSpec, capacity: int | None, tp: int) -> int:
    distributed = 0 if tp == 1 else (TP_PCIE_BYTES if gpu.interconnect == "pcie" else TP_NVLINK_BYTES)
    return torch_total_bytes(gpu, capacity) - CUDA_CONTEXT_BYTES - distributed


def free_before_note(gpu: GpuSpec, tp: int) -> str:
    links = "" if tp == 1 else f" and {gib(TP_PCIE_BYTES if gpu.interconnect == 'pcie' else TP_NVLINK_BYTES)}"
    what = "" if tp == 1 else f" of NCCL/all-reduce buffers at TP {tp}"
    return (
        f"free memory before the weights load predicted, not measured: what CUDA reports less "
        f"{gib(CUDA_CONTEXT_BYTES)} of CUDA context{links}{what} (fitted on the calibration logs)"
    )


def weights_on_rank(spec: ModelSpec, width: int, method: str | None, tp: int, stage: int, pp: int) -> int:
    """One rank's weights as vLLM's loader model sizes them (the same checkpoint, the same shards), and a
    vision tower's parameters in the model dtype, split over TP except the parts the catalog says every
    rank holds whole (ModelRunner loads the tower with the language model, inside mem_fraction_static)."""
    weights = loaded_weight_bytes(spec, width, quantization_of(method, spec), tp, stage, pp)
    vision = spec.vision
    if vision is None or vision.params is None or stage:
        return weights
    split = vision.params - vision.replicated_params
    return weights + (split // tp + vision.replicated_params) * width


def weights_note(spec: ModelSpec) -> str:
    tower = " and its vision tower (split over TP as the catalog says)" if spec.vision else ""
    return f"weights sized as vLLM loads the same checkpoint{tower}: SGLang's loader was not read for them"
