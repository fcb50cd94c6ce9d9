"""Records for the vLLM startup prediction: the settings asked about and the numbers predicted."""

from __future__ import annotations

from pydantic import Field

from gpumem_tui.catalog.schema import GpuSpec, ModelSpec
from gpumem_tui.planner.records import NonNegative
from gpumem_tui.planner.vllm.versions import DEFAULT_VERSION
from gpumem_tui.records import FiniteRecord
from gpumem_tui.units import GIB


class EngineSettings(FiniteRecord):
    """`vllm serve` flags that decide memory; None means the release's default."""

    model: ModelSpec
    gpu: GpuSpec
    version: str = DEFAULT_VERSION
    tp: int = Field(default=1, gt=0)
    pp: int = Field(default=1, gt=0)
    dtype: str = "auto"
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    utilization: float = Field(default=0.9, gt=0, le=1)
    max_model_len: int | None = Field(default=None, gt=0)
    check_length: bool = False
    """Hold max_model_len to the model's maximum as vLLM does at config time: a plan's asked length. Off for
    settings read from a log or a running engine, which passed that check already (or run with
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)."""
    max_num_seqs: int | None = Field(default=None, gt=0)
    max_num_batched_tokens: int | None = Field(default=None, gt=0)
    enforce_eager: bool = False
    kv_cache_memory_bytes: int | None = Field(default=None, gt=0)
    block_size: int | None = Field(default=None, gt=0)
    total_memory_bytes: int | None = Field(default=None, gt=0)
    """What CUDA reports as the device total, when known better than the catalog (a log states it)."""
    other_processes_bytes: NonNegative = 0
    """GPU memory other processes hold when the engine starts."""
    limit_mm_per_prompt: dict[str, int] | None = None
    """`--limit-mm-per-prompt` as counts per modality (`vision.mm_limits`); 0 for every modality the vision
    tower serves loads no tower and profiles no encoder."""


TERM_LABELS = {
    "sampler_peak": "sampler peak",
    "forward_peak": "forward peak",
    "vision_tower": "vision tower counted",
    "rope_cache": "RoPE caches",
    "encoder_profile": "encoder dummy inputs",
    "mxfp4_layout": "MXFP4 Hopper layout padding",
    "graph_split_buffers": "CUDA-graph split buffers",
    "moe_workspace": "MoE workspace",
}
"""What each named sizing term is called on screen (`engine.terms` keys are the JSON names)."""


def term_line(key: str, value: int) -> str:
    """One applied term as the human output says it: 'sampler peak: 0.79 GiB'."""
    return f"{TERM_LABELS.get(key, key)}: {value / GIB:,.2f} GiB"


class RankPrediction(FiniteRecord):
    """One GPU of the deployment (TP ranks are alike; PP stages differ)."""

    stage: int
    weights_bytes: int
    activation_peak_bytes: int
    non_torch_bytes: int
    kv_cache_bytes: int
    num_gpu_blocks: int
    terms: dict[str, int] = {}
    """The named sizing terms that applied on this rank (see `EnginePrediction.terms`)."""


class EnginePrediction(FiniteRecord):
    """What the release will log and hold. Memory figures are the first rank's (the one whose lines a
    pipeline-parallel log shows); the block count is the minimum over ranks, which decides the pool."""

    name: str = "vllm"
    version: str
    total_gpu_memory_bytes: int
    requested_memory_bytes: int
    weights_bytes: NonNegative
    """What the engine holds besides its KV cache is never negative (the KV cache is, when it does not start)."""
    non_torch_bytes: NonNegative
    activation_peak_bytes: NonNegative
    cudagraph_bytes: NonNegative
    cudagraph_charged: bool
    kv_cache_bytes: int
    num_gpu_blocks: int
    block_size: int
    kv_cache_tokens: int
    max_concurrency: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    ranks: list[RankPrediction]
    log_lines: list[str]
    failures: list[str]
    warnings: list[str]
    kv_cache_memory_most_bytes: int | None = None
    """With --kv-cache-memory (0.10.2+), which sets each GPU's pool: the largest size that starts on this
    split, with room for the CUDA graphs and sampler warm-up after it (negative: none does). None without it."""
    assumed: list[str] = []
    """Figures the vLLM source read does not decide for this GPU or release, each said as assumed."""
    terms: dict[str, int] = {}
    """The named sizing terms that applied (the first rank's, plus the deployment's own), name -> bytes per
    GPU: each is a part of weights, activation peak, non-torch, CUDA graphs or the KV page that a model
    class or setting brings (a vision tower, a MoE workspace, the sampler's peak)."""

    def term_lines(self) -> list[str]:
        """The applied terms as the human output says them, largest first."""
        ranked = sorted(self.terms.items(), key=lambda item: -item[1])
        return [term_line(key, value) for key, value in ranked]

    def engine_json(self) -> dict:
        """The documented `engine` object of `plan --engine vllm --json`."""
        keys = [
            "name",
            "version",
            "total_gpu_memory_bytes",
            "weights_bytes",
            "non_torch_bytes",
            "activation_peak_bytes",
            "cudagraph_bytes",
            "kv_cache_bytes",
            "num_gpu_blocks",
            "kv_cache_tokens",
            "max_concurrency",
        ]
        data = {key: getattr(self, key) for key in keys}
        data["max_concurrency"] = round(self.max_concurrency, 4)
        extra = [
            "requested_memory_bytes",
            "cudagraph_charged",
            "block_size",
            "max_model_len",
            "max_num_seqs",
            "max_num_batched_tokens",
            "log_lines",
            "failures",
            "warnings",
            "assumed",
            "terms",
        ]
        data.update({key: getattr(self, key) for key in extra})
        data["ranks"] = [rank.model_dump() for rank in self.ranks]
        return data
