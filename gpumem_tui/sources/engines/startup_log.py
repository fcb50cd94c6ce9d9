"""The record a vLLM or SGLang startup log parses into: what the lines state, null where they are silent."""

from __future__ import annotations

from typing import Literal

from gpumem_tui.records import Record

FailureKind = Literal["free_memory_below_requested", "kv_cache_too_small", "sampler_warmup_oom", "cuda_out_of_memory"]

PER_RANK_KEYS = (
    "total_gpu_memory_gib",
    "weights_gib",
    "non_torch_gib",
    "activation_peak_gib",
    "cudagraph_estimated_gib",
    "cudagraph_gib",
    "kv_cache_gib",
)
"""Each worker (GPU) logs its own; the record reports every rank and one engine-wide value."""
LOWEST_WINS = ("total_gpu_memory_gib", "kv_cache_gib")
"""The engine sizes every rank's pool from the smallest KV budget and GPU; other keys take the largest."""
INT_KEYS = ("tensor_parallel_size", "max_model_len", "num_gpu_blocks", "kv_cache_tokens")
TEXT_KEYS = ("vllm_version", "model", "dtype", "quantization", "kv_cache_dtype", "limit_mm_per_prompt")
KEYS = (
    "vllm_version",
    "model",
    "tensor_parallel_size",
    "dtype",
    "quantization",
    "kv_cache_dtype",
    "gpu_memory_utilization",
    "max_model_len",
    *PER_RANK_KEYS,
    "num_gpu_blocks",
    "kv_cache_tokens",
    "max_concurrency",
)


class ProcessMemory(Record):
    """`Process N has X memory in use`: a process the out-of-memory message names."""

    pid: int
    bytes: int


class OomClues(Record):
    """What PyTorch's out-of-memory message states, as ints of bytes; null where it does not say."""

    device: int | None = None
    tried_to_allocate_bytes: int | None = None
    total_capacity_bytes: int | None = None
    free_bytes: int | None = None
    allowed_bytes: int | None = None
    processes: list[ProcessMemory] = []
    this_process_bytes: int | None = None
    allocated_by_pytorch_bytes: int | None = None
    private_pools_bytes: int | None = None
    reserved_unallocated_bytes: int | None = None
    reserved_by_pytorch_bytes: int | None = None


class Failure(Record):
    """A startup failure the log states, in words, with the line that said it."""

    kind: FailureKind
    message: str
    line: str
    oom: OomClues | None = None
    """With `cuda_out_of_memory`: the clues PyTorch's message gives (an addition to the issue's keys)."""


class RankValues(Record):
    """What one worker process (one GPU) logged."""

    rank: str
    """`TP0`, `PP1_TP0`, `main` (the engine process itself) or `pid N` when the log never names the rank."""
    total_gpu_memory_gib: float | None = None
    weights_gib: float | None = None
    non_torch_gib: float | None = None
    activation_peak_gib: float | None = None
    cudagraph_estimated_gib: float | None = None
    cudagraph_gib: float | None = None
    kv_cache_gib: float | None = None


class StartupLog(Record):
    """Values exactly as the lines state them (GiB where the old lines say "GB"), null when not said."""

    vllm_version: str | None = None
    model: str | None = None
    tensor_parallel_size: int | None = None
    dtype: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    total_gpu_memory_gib: float | None = None
    weights_gib: float | None = None
    non_torch_gib: float | None = None
    activation_peak_gib: float | None = None
    cudagraph_estimated_gib: float | None = None
    cudagraph_gib: float | None = None
    kv_cache_gib: float | None = None
    num_gpu_blocks: int | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    limit_mm_per_prompt: str | None = None
    """`--limit-mm-per-prompt` as the non-default args print it (`{'image': 0}`): an addition to the issue's
    keys, read by `log --compare` (issue 15, term 3)."""
    failures: list[Failure] = []
    engine: Literal["vllm", "sglang"] | None = None
    """Which engine's lines were found (an addition to the issue's keys)."""
    ranks: list[RankValues] = []
    """Per-worker values when more than one worker logged them (an addition to the issue's keys)."""
    startup_complete: bool = False
    """The log shows the start ended well: `init engine (...) took N seconds` or the API server's
    `Application startup complete`. False when it does not show it (a failure, or a cut excerpt)."""
