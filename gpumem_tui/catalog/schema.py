"""Pydantic records for catalog entries: models (architecture), GPUs (memory, bandwidth), weight formats."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from gpumem_tui.records import FiniteRecord
from gpumem_tui.units import GIB, MIB

# Upper bounds on what a file may declare: about ten times the largest real model (Llama 3.1 405B's 126
# layers and 16,384 hidden, 128 heads, Gemma 3's 262,208 vocabulary, Kimi K2's 384 experts, Llama 4 Scout's
# 10M context). A file beyond them is refused rather than planned: nothing real is that size, and each
# bound keeps the arithmetic (and the engine's block layout) small.
MAX_LAYERS = 2_000
MAX_WIDTH = 1_048_576
"""hidden, intermediate and expert sizes, latent ranks."""
MAX_HEADS = 4_096
MAX_HEAD_DIM = 8_192
MAX_VOCAB = 4_194_304
MAX_EXPERTS = 8_192
MAX_CONTEXT = 100_000_000
MAX_PARAMS = 10**15


class _Entry(FiniteRecord):
    # built when an entry is first validated: a catalog read from the cache (cache.py) never needs it
    model_config = ConfigDict(extra="forbid", defer_build=True)


class MoeSpec(_Entry):
    """Mixture-of-experts layout: every expert stays in memory, only `experts_per_token` run."""

    experts: int = Field(gt=0, le=MAX_EXPERTS)
    experts_per_token: int = Field(gt=0, le=MAX_EXPERTS)
    expert_intermediate_size: int = Field(gt=0, le=MAX_WIDTH)
    shared_experts: int = Field(default=0, ge=0, le=MAX_EXPERTS)
    shared_expert_intermediate_size: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    """Width of each shared expert where it is not `expert_intermediate_size` (Qwen2-MoE's
    `shared_expert_intermediate_size`)."""
    shared_expert_gate: bool = False
    """Each MoE layer gates its shared expert through a hidden -> 1 linear (Qwen2-MoE)."""
    moe_every: int = Field(default=1, gt=0, le=MAX_LAYERS)
    """In each run of this many layers the last one is MoE, the others dense (Llama 4's
    `interleave_moe_layer_step`, Qwen2-MoE's `decoder_sparse_step`)."""
    first_dense_layers: int = Field(default=0, ge=0, le=MAX_LAYERS)
    """Leading layers with a plain dense MLP of `intermediate_size` (DeepSeek `first_k_dense_replace`)."""
    router_bias: bool = False
    """Router carries a bias (gpt-oss) or a score-correction vector (DeepSeek-V3)."""
    expert_bias: bool = False

    @model_validator(mode="after")
    def _routes_to_experts_it_has(self) -> MoeSpec:
        if self.experts_per_token > self.experts:
            raise ValueError(f"experts_per_token {self.experts_per_token} is more than the {self.experts} experts")
        return self


class MlaSpec(_Entry):
    """Multi-head latent attention (DeepSeek V2/V3): the cache holds one latent per layer and token."""

    q_lora_rank: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    kv_lora_rank: int = Field(gt=0, le=MAX_WIDTH)
    qk_nope_head_dim: int = Field(gt=0, le=MAX_HEAD_DIM)
    qk_rope_head_dim: int = Field(gt=0, le=MAX_HEAD_DIM)
    v_head_dim: int = Field(gt=0, le=MAX_HEAD_DIM)


class SlidingWindowSpec(_Entry):
    """Layers that attend to the last `size` tokens only; their KV stops growing at the window."""

    size: int = Field(gt=0, le=MAX_CONTEXT)
    global_every: int | None = Field(default=None, gt=0, le=MAX_LAYERS)
    """In each run of this many layers the last one is full attention; None means every layer slides."""


class VisionSpec(_Entry):
    """A multimodal checkpoint's vision tower and projector (`...ForConditionalGeneration`): vLLM loads them
    beside the language model unless every modality they serve is limited to 0 items per prompt."""

    params: int | None = Field(default=None, gt=0, le=MAX_PARAMS)
    """Tower and projector parameters, loaded in the model dtype; None where the entry does not know them
    (then the tower is not counted, and a prediction says so)."""
    modalities: list[str] = ["image"]
    """What the tower encodes: `--limit-mm-per-prompt` at 0 for all of them skips it."""
    tokens_per_image: int | None = Field(default=None, gt=0, le=MAX_CONTEXT)
    """Embeddings the largest image becomes (Gemma 3's `mm_tokens_per_image`): the encoder budget's item."""
    pixels_per_image: int | None = Field(default=None, gt=0, le=MAX_PARAMS)
    """Input values of the largest dummy image the processor makes (channels x height x width x tiles).
    The encoder's dummy inputs are counted only where both are known."""
    replicated_params: int = Field(default=0, ge=0, le=MAX_PARAMS)
    """Of `params`, those every TP rank holds whole (patch convolutions, position embeddings, norms,
    row-parallel biases, replicated projectors); 0 where the entry does not say (then all are split)."""
    encoder_buffer_bytes: int = Field(default=0, ge=0, le=MAX_PARAMS)
    """A table the encoder builds on its first run and keeps, alive through the profile's peak whatever the
    model dtype (MoonViT's 2-D RoPE table, complex64)."""
    sources: list[str] = []


class ChunkedAttentionSpec(_Entry):
    """Layers that attend only within their `size`-token chunk of the sequence (Llama 4's
    `attention_chunk_size`); the others, the last of each run of `full_every`, attend to everything."""

    size: int = Field(gt=0, le=MAX_CONTEXT)
    full_every: int | None = Field(default=None, gt=0, le=MAX_LAYERS)
    """In each run of this many layers the last one is full attention; None means every layer is chunked."""


class RopeScalingSpec(_Entry):
    """A config.json `rope_scaling` other than linear (a linear one is in `rope_caches`): yarn, dynamic,
    llama3, longrope. It decides the longest context vLLM and SGLang accept, each by its own rule
    (planner/vllm/risks.py, planner/sglang/risks.py)."""

    type: str = Field(min_length=1, max_length=32)
    factor: float = Field(default=1.0, gt=0, le=1024)
    original_max_position_embeddings: int | None = Field(default=None, gt=0, le=MAX_CONTEXT)


class RepoAlias(_Entry):
    """Another Hugging Face repository of an entry's architecture: the chat or instruct tune of a base model
    (or the base of a tuned one), a repository under its earlier name. Its config.json has the entry's
    dimensions, so its id resolves to the entry."""

    id: str = Field(pattern=r"^[^/\s]+/[^/\s]+$")
    """ORG/NAME, as vLLM logs it and `/v1/models` reports it."""
    source: str = Field(min_length=1)
    """Where that config.json (or the maker's table of both) was seen to agree with the entry."""


class ModelSpec(_Entry):
    """A transformer's architecture, enough to count parameters and KV bytes exactly."""

    id: str
    aliases: list[str] = []
    """Short names typed by hand (`llama-3.1-70b`)."""
    repo_aliases: list[RepoAlias] = []
    architecture: str
    layers: int = Field(gt=0, le=MAX_LAYERS)
    hidden_size: int = Field(gt=0, le=MAX_WIDTH)
    intermediate_size: int = Field(gt=0, le=MAX_WIDTH)
    attention_heads: int = Field(gt=0, le=MAX_HEADS)
    kv_heads: int = Field(gt=0, le=MAX_HEADS)
    head_dim: int | None = Field(default=None, gt=0, le=MAX_HEAD_DIM)
    """Explicit head size where it is not hidden_size / attention_heads (Gemma, Qwen3, gpt-oss)."""
    vocab_size: int = Field(gt=0, le=MAX_VOCAB)
    tie_word_embeddings: bool = False
    native_dtype: str | None = None
    max_context: int | None = Field(default=None, gt=0, le=MAX_CONTEXT)
    checkpoint_format: str | None = None
    """The format the published weights ship in, when it is not the native dtype: a catalog format (fp8,
    mxfp4, int4) or the vLLM method of a quantized checkpoint (awq, gptq, w4a16)."""
    quant_group_size: int | None = Field(default=None, ge=-1, le=MAX_WIDTH)
    """Weights per scale (and per zero point) of a 4-bit AWQ or GPTQ checkpoint, from its config's
    `group_size` (-1: one per output channel); None: 128, what AutoAWQ and AutoGPTQ write by default."""
    qkv_bias: bool = False
    attention_out_bias: bool = False
    qk_norm: bool = False
    norms_per_layer: int = Field(default=2, ge=0, le=16)
    attention_sinks: bool = False
    moe: MoeSpec | None = None
    mla: MlaSpec | None = None
    sliding_window: SlidingWindowSpec | None = None
    rope_caches: list[Annotated[float, Field(gt=0, le=1024)]] = Field(default=[1.0], max_length=16)
    """The RoPE cos/sin caches vLLM builds, each as its linear scaling factor (max position x factor rows):
    Gemma 3 builds a scaled one for its global layers and a plain one for its local layers."""
    rope_scaling: RopeScalingSpec | None = None
    vision: VisionSpec | None = None
    chunked_attention: ChunkedAttentionSpec | None = None
    params_total_published: int | None = Field(default=None, gt=0, le=MAX_PARAMS)
    """A published or independently computed count, kept to check the arithmetic against."""
    notes: str = ""
    sources: list[str] = []

    @model_validator(mode="after")
    def _shape_holds_together(self) -> ModelSpec:
        """Heads that split the hidden size and share KV heads evenly; dense layers within the layers."""
        if self.kv_heads > self.attention_heads:
            raise ValueError(f"kv_heads {self.kv_heads} is more than the {self.attention_heads} attention heads")
        if self.hidden_size < self.attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is smaller than its {self.attention_heads} attention heads"
            )
        if self.head_dim is None and self.hidden_size % self.attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} does not split into {self.attention_heads} "
                "attention heads (and no head_dim is given)"
            )
        if self.quant_group_size == 0:
            raise ValueError("quant_group_size 0: a group holds at least one weight (-1: one per output channel)")
        if self.moe is not None and self.moe.first_dense_layers > self.layers:
            raise ValueError(
                f"moe.first_dense_layers {self.moe.first_dense_layers} is more than the {self.layers} layers"
            )
        return self

    @property
    def head_size(self) -> int:
        return self.head_dim or self.hidden_size // self.attention_heads

    @property
    def names(self) -> list[str]:
        """Every name the entry answers to: its id, its short names and its repository aliases."""
        return [self.id, *self.aliases, *(alias.id for alias in self.repo_aliases)]

    def moe_layer_count(self) -> int:
        """How many layers carry experts: past the leading dense layers, the last of each `moe_every`."""
        moe = self.moe
        if moe is None:
            return 0
        return self.layers // moe.moe_every - moe.first_dense_layers // moe.moe_every

    def sliding_layer_count(self) -> int:
        """How many layers use the sliding window: counted, never listed (a file may declare many layers)."""
        window = self.sliding_window
        if window is None:
            return 0
        if window.global_every is None:
            return self.layers
        return self.layers - self.layers // window.global_every

    def chunked_layer_count(self) -> int:
        """How many layers use chunked local attention (counted, like the sliding ones)."""
        chunks = self.chunked_attention
        if chunks is None:
            return 0
        if chunks.full_every is None:
            return self.layers
        return self.layers - self.layers // chunks.full_every

    def slides(self, layer: int) -> bool:
        """Whether the layer at this index (from 0) uses the sliding window: the last of each run of
        `global_every` layers attends to everything."""
        window = self.sliding_window
        if window is None:
            return False
        return window.global_every is None or (layer + 1) % window.global_every != 0


class GpuSpec(_Entry):
    """One accelerator: how much memory the driver reports, how fast it moves and computes."""

    key: str
    aliases: list[str] = []
    vendor: Literal["nvidia", "amd"] = "nvidia"
    nvml_names: list[str] = []
    memory_gb_marketed: float | None = None
    total_mib: int | None = Field(default=None, gt=0, le=2**24)
    """Total memory as nvidia-smi reports it (what NVML and the engine see)."""
    nominal_gib: float | None = Field(default=None, gt=0, le=2**14)
    """Vendor's nominal capacity, used only where no reported total is known."""
    torch_total_gib: float | None = Field(default=None, gt=0, le=2**14)
    """Total memory as CUDA reports it to the process (`torch.cuda.mem_get_info()[1]`), where observed."""
    mem_bandwidth_gbps: float | None = None
    bf16_tflops_dense: float | None = None
    fp8_tflops_dense: float | None = None
    nvlink_gbps_per_direction: float | None = None
    pcie_gen: int | None = None
    interconnect: Literal["nvlink", "pcie"] | None = None
    """How the cards of one node talk to each other: NVLink/NVSwitch, or PCIe only; None where unknown."""
    compute_capability: str | None = Field(default=None, pattern=r"^\d+\.\d+$")
    """CUDA compute capability, "major.minor" (9.0 Hopper, 10.0 Blackwell B200)."""
    power_limit_w: float | None = None
    sm_count: int | None = Field(default=None, gt=0, le=4096)
    """Streaming multiprocessors the product enables (not the full die), from a source that says so; None
    where none was found. vLLM sizes its Triton top-k/top-p buffer by it."""
    l2_cache_mib: int | None = Field(default=None, gt=0, le=4096)
    """The L2 cache as CUDA reports it, MiB, from a source that says so; None where none was found. Inductor
    flushes it with a buffer of this size while it autotunes a kernel (vLLM's compiled forward pass)."""
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

    @property
    def cc_major(self) -> int | None:
        """The compute capability's major number (the GPU generation engines choose kernels by)."""
        return int(self.compute_capability.split(".")[0]) if self.compute_capability else None


class FormatSpec(_Entry):
    """A weight number format: bits per value, scales folded in, and what stays 16-bit."""

    name: str
    aliases: list[str] = []
    bits_per_param: float = Field(gt=0, le=64)
    """Bits per quantized value including its share of block scales (int4 with scales: 4.5)."""
    scope: Literal["all", "linear", "experts"] = "all"
    """Which parameters take this format; the rest stay at 16 bits. `linear` leaves embeddings and
    the LM head in 16-bit; `experts` quantizes only MoE expert weights (gpt-oss MXFP4)."""
    kv_dtype: str = "bf16"
    """KV-cache dtype the fit table pairs with this format (seed: 16-bit KV for BF16, FP8 KV otherwise)."""
    description: str = ""
