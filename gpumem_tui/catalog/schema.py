"""Pydantic records for catalog entries: models (architecture), GPUs (memory, bandwidth), weight formats."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpumem_tui.units import GIB, MIB


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MoeSpec(_Entry):
    """Mixture-of-experts layout: every expert stays in memory, only `experts_per_token` run."""

    experts: int = Field(gt=0)
    experts_per_token: int = Field(gt=0)
    expert_intermediate_size: int = Field(gt=0)
    shared_experts: int = Field(default=0, ge=0)
    first_dense_layers: int = Field(default=0, ge=0)
    """Leading layers with a plain dense MLP of `intermediate_size` (DeepSeek `first_k_dense_replace`)."""
    router_bias: bool = False
    """Router carries a bias (gpt-oss) or a score-correction vector (DeepSeek-V3)."""
    expert_bias: bool = False


class MlaSpec(_Entry):
    """Multi-head latent attention (DeepSeek V2/V3): the cache holds one latent per layer and token."""

    q_lora_rank: int | None = None
    kv_lora_rank: int = Field(gt=0)
    qk_nope_head_dim: int = Field(gt=0)
    qk_rope_head_dim: int = Field(gt=0)
    v_head_dim: int = Field(gt=0)


class SlidingWindowSpec(_Entry):
    """Layers that attend to the last `size` tokens only; their KV stops growing at the window."""

    size: int = Field(gt=0)
    global_every: int | None = Field(default=None, gt=0)
    """In each run of this many layers the last one is full attention; None means every layer slides."""


class ModelSpec(_Entry):
    """A transformer's architecture, enough to count parameters and KV bytes exactly."""

    id: str
    aliases: list[str] = []
    architecture: str
    layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    intermediate_size: int = Field(gt=0)
    attention_heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int | None = Field(default=None, gt=0)
    """Explicit head size where it is not hidden_size / attention_heads (Gemma, Qwen3, gpt-oss)."""
    vocab_size: int = Field(gt=0)
    tie_word_embeddings: bool = False
    native_dtype: str | None = None
    max_context: int | None = Field(default=None, gt=0)
    checkpoint_format: str | None = None
    """The format the published weights ship in, when it is not the native dtype (fp8, mxfp4)."""
    qkv_bias: bool = False
    attention_out_bias: bool = False
    qk_norm: bool = False
    norms_per_layer: int = Field(default=2, ge=0)
    attention_sinks: bool = False
    moe: MoeSpec | None = None
    mla: MlaSpec | None = None
    sliding_window: SlidingWindowSpec | None = None
    params_total_published: int | None = None
    """A published or independently computed count, kept to check the arithmetic against."""
    notes: str = ""
    sources: list[str] = []

    @property
    def head_size(self) -> int:
        return self.head_dim or self.hidden_size // self.attention_heads

    def sliding_layers(self) -> list[int]:
        """Indices of layers that use the sliding window."""
        window = self.sliding_window
        if window is None:
            return []
        if window.global_every is None:
            return list(range(self.layers))
        return [i for i in range(self.layers) if (i + 1) % window.global_every != 0]


class GpuSpec(_Entry):
    """One accelerator: how much memory the driver reports, how fast it moves and computes."""

    key: str
    aliases: list[str] = []
    vendor: Literal["nvidia", "amd"] = "nvidia"
    nvml_names: list[str] = []
    memory_gb_marketed: float | None = None
    total_mib: int | None = Field(default=None, gt=0)
    """Total memory as nvidia-smi reports it (what NVML and the engine see)."""
    nominal_gib: float | None = Field(default=None, gt=0)
    """Vendor's nominal capacity, used only where no reported total is known."""
    torch_total_gib: float | None = Field(default=None, gt=0)
    """Total memory as CUDA reports it to the process (`torch.cuda.mem_get_info()[1]`), where observed."""
    mem_bandwidth_gbps: float | None = None
    bf16_tflops_dense: float | None = None
    fp8_tflops_dense: float | None = None
    nvlink_gbps_per_direction: float | None = None
    pcie_gen: int | None = None
    power_limit_w: float | None = None
    notes: str = ""
    sources: list[str] = []

    @model_validator(mode="after")
    def _has_capacity(self) -> GpuSpec:
        if self.total_mib is None and self.nominal_gib is None:
            raise ValueError("needs total_mib (as nvidia-smi reports it) or nominal_gib")
        return self

    @property
    def capacity_bytes(self) -> int:
        """Memory the card reports; the nominal figure only where the reported one is unknown."""
        if self.total_mib is not None:
            return self.total_mib * MIB
        return round((self.nominal_gib or 0) * GIB)

    @property
    def capacity_is_nominal(self) -> bool:
        return self.total_mib is None


class FormatSpec(_Entry):
    """A weight number format: bits per value, scales folded in, and what stays 16-bit."""

    name: str
    aliases: list[str] = []
    bits_per_param: float = Field(gt=0)
    """Bits per quantized value including its share of block scales (int4 with scales: 4.5)."""
    scope: Literal["all", "linear", "experts"] = "all"
    """Which parameters take this format; the rest stay at 16 bits. `linear` leaves embeddings and
    the LM head in 16-bit; `experts` quantizes only MoE expert weights (gpt-oss MXFP4)."""
    kv_dtype: str = "bf16"
    """KV-cache dtype the fit table pairs with this format (seed: 16-bit KV for BF16, FP8 KV otherwise)."""
    description: str = ""
