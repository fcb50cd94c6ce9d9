"""Training memory: full fine-tuning with Adam (16 bytes per parameter), LoRA and QLoRA."""

from __future__ import annotations

import math

from gpumem_tui.catalog.schema import FormatSpec, ModelSpec
from gpumem_tui.planner.params import count_params
from gpumem_tui.planner.weights import weights_bytes
from gpumem_tui.records import Record

# Mixed-precision Adam (ZeRO paper): 2 weights + 2 gradients + 4 master + 4 momentum + 4 variance.
FULL_BYTES_PER_PARAM = 16
ADAPTER_BYTES_PER_PARAM = 16
DEFAULT_ACTIVATION_FRACTION = 0.20


class TrainingEstimate(Record):
    """Memory for one training setup, by part, all GPUs together."""

    mode: str
    weights_bytes: int
    trainable_params: int
    trainable_state_bytes: int
    """Gradients and optimizer state of what is trained (and master weights for full training)."""
    activations_bytes: int
    total_bytes: int


def full_training(spec: ModelSpec, activation_fraction: float = DEFAULT_ACTIVATION_FRACTION) -> TrainingEstimate:
    """Every parameter trained: 16 bytes each, plus activations as a share of that (20 % with checkpointing)."""
    params = count_params(spec).total
    states = params * FULL_BYTES_PER_PARAM
    activations = math.ceil(states * activation_fraction)
    return TrainingEstimate(
        mode="full",
        weights_bytes=params * 2,
        trainable_params=params,
        trainable_state_bytes=states - params * 2,
        activations_bytes=activations,
        total_bytes=states + activations,
    )


def lora_params(spec: ModelSpec, rank: int) -> int:
    """Adapter parameters for rank-`rank` LoRA on every attention and MLP projection of every layer."""
    hidden, head = spec.hidden_size, spec.head_size
    q, kv = spec.attention_heads * head, spec.kv_heads * head
    attention = rank * ((hidden + q) * 2 + (hidden + kv) * 2)
    mlp_width = spec.moe.expert_intermediate_size if spec.moe else spec.intermediate_size
    mlp = rank * 3 * (hidden + mlp_width)
    return spec.layers * (attention + mlp)


def checkpointed_activations(spec: ModelSpec, batch: int, sequence: int) -> int:
    """Activation memory with gradient checkpointing: each layer's 16-bit input, one layer's working set
    recomputed at a time, and the fp32 logits."""
    tokens = batch * sequence
    kept = spec.layers * tokens * spec.hidden_size * 2
    one_layer = tokens * (4 * spec.hidden_size + 3 * spec.intermediate_size) * 2
    logits = tokens * spec.vocab_size * 4
    return kept + one_layer + logits


def adapter_training(
    spec: ModelSpec, base_format: FormatSpec, rank: int = 16, batch: int = 1, sequence: int = 2048, mode: str = "lora"
) -> TrainingEstimate:
    """LoRA (16-bit frozen base) or QLoRA (NF4 frozen base): base weights, adapters with their Adam
    state, and checkpointed activations."""
    base = weights_bytes(count_params(spec), base_format)
    adapters = lora_params(spec, rank)
    state = adapters * ADAPTER_BYTES_PER_PARAM
    activations = checkpointed_activations(spec, batch, sequence)
    return TrainingEstimate(
        mode=mode,
        weights_bytes=base,
        trainable_params=adapters,
        trainable_state_bytes=state,
        activations_bytes=activations,
        total_bytes=base + state + activations,
    )
