"""What must fit in the memory the KV pool leaves: SGLang sizes the pool before any forward pass or graph
capture, so the attention backend's workspace, the CUDA graphs and the activations of a prefill chunk all
come out of total x (1 - mem_fraction_static) less the request table (reference section 3). Nothing of
them is measured at start; these are estimates, said as such."""

from __future__ import annotations

from gpumem_tui.catalog.schema import ModelSpec
from gpumem_tui.planner.vllm.profile import forward_bytes
from gpumem_tui.units import GIB, MIB

WORKSPACE_BYTES = 512 * MIB
"""The attention backend's constant buffers: SGLang's own figure in its 0.5.3+ reserve ("constant meta
data", server_args.py `_handle_gpu_memory_settings`)."""
GRAPH_PER_LAYER_BYTES = round(0.015 * GIB)
"""CUDA-graph memory per layer for the default capture list: fitted on the two logs that state it (Grok-2
FP8 at TP 8, 64 layers, batches to 160: 0.89 GB; QwQ-32B at TP 4 on L4, 64 layers, batches to 80: 0.93 GB;
the log's GB are GiB). Llama-4 Maverick logs 6.19 GB (issue #8538): MoE models can need far more."""
FP32 = 4
LOGIT_COPIES = 2
"""fp32 logits and the sampler's probabilities over the vocabulary, one row per request in the batch."""


def cudagraph_bytes(layers: int, disabled: bool) -> int:
    return 0 if disabled else GRAPH_PER_LAYER_BYTES * layers


def activation_bytes(spec: ModelSpec, chunk: int, rows: int, width: int, tp: int) -> int:
    """A prefill chunk's widest moment (the MLP's, as planner/vllm/profile.forward_bytes sizes it) and the
    logits of the largest graph batch."""
    return forward_bytes(spec, chunk, width, tp) + rows * spec.vocab_size * FP32 * LOGIT_COPIES
