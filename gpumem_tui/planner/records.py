"""Plan records: what the planner was asked and what it answers, sizes in int bytes."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from gpumem_tui.catalog.schema import FormatSpec, GpuSpec, ModelSpec
from gpumem_tui.records import FiniteRecord

NonNegative = Annotated[int, Field(ge=0)]
"""A term that cannot be negative is held to it: a model whose arithmetic gives one is refused."""


class PlanInput(FiniteRecord):
    """One serving question: this model, in this format, for these users, on these GPUs."""

    model: ModelSpec
    gpu: GpuSpec
    weights_format: FormatSpec
    kv_dtype: str = "auto"
    context: int = Field(default=8192, gt=0)
    users: int = Field(default=1, ge=0)
    gpus: int | None = Field(default=None, gt=0)
    """The split; None asks the planner for the fewest of 1/2/4/8 that fit."""
    utilization: float = Field(default=0.9, gt=0, le=1)
    overhead_bytes: int = Field(default=4 * 10**9, ge=0)
    """Runtime overhead per GPU (CUDA context, activations, graphs) outside weights and KV."""
    overhead_fraction: float | None = Field(default=None, ge=0)
    """Overhead as a share of each GPU's weights + KV instead of a fixed size (third seed: 10 %)."""
    capacity_bytes: int | None = Field(default=None, gt=0)
    """Overrides the card's reported capacity (the seeds reason with a round 80 GB per H100)."""
    kv_heads: int | None = Field(default=None, gt=0)
    """Overrides the model's KV heads (e.g. the no-GQA simplification: KV heads = attention heads)."""
    weights_bytes_override: int | None = Field(default=None, gt=0)
    """Exact weight bytes read from safetensors headers, used instead of params x format."""

    @property
    def capacity(self) -> int:
        return self.capacity_bytes or self.gpu.capacity_bytes


class Band(FiniteRecord):
    """One slice of a GPU's memory."""

    name: str
    bytes: int


class GpuBudget(FiniteRecord):
    """One GPU of the split: its capacity cut into bands that sum to it."""

    capacity_bytes: int
    usable_bytes: int
    """capacity x utilization - overhead: what weights and KV may use."""
    bands: list[Band]


class Plan(FiniteRecord):
    """The answer: does it fit, with how much spare, and what else the same GPUs could hold."""

    input: PlanInput
    params_total: NonNegative
    params_active: NonNegative
    weights_bytes: NonNegative
    kv_bytes_per_token: NonNegative
    kv_bytes: NonNegative
    gpus: int
    per_gpu: GpuBudget
    fits: bool
    spare_bytes: int
    spare_fraction: float
    fewest_gpus: int | None
    max_users_at_context: int
    max_context_at_users: int | None
    kv_pool_bytes: int
    """Memory left for KV cache on all GPUs once weights and overhead are placed (negative: does not start)."""
    split_problem: str | None
    warnings: list[str]
