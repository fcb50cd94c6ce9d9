"""The record a vLLM or SGLang startup log parses into: what the lines state, null where they are silent."""

from __future__ import annotations

from typing import Literal

from gpumem_tui.records import Record

FailureKind = Literal["free_memory_below_requested", "kv_cache_too_small", "sampler_warmup_oom", "cuda_out_of_memory"]


class EngineSettings(Record):
    """The engine's settings the log states, by vLLM's names (an SGLang log's `mem_fraction_static` is kept as
    `gpu_memory_utilization`): StartupLog's first keys."""

    vllm_version: str | None = None
    model: str | None = None
    tensor_parallel_size: int | None = None
    dtype: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None


class RankMemory(Record):
    """The memory numbers each worker (GPU) logs for itself: StartupLog holds one engine-wide value of each,
    RankValues one worker's."""

    total_gpu_memory_gib: float | None = None
    weights_gib: float | None = None
    non_torch_gib: float | None = None
    activation_peak_gib: float | None = None
    cudagraph_estimated_gib: float | None = None
    cudagraph_gib: float | None = None
    kv_cache_gib: float | None = None


PER_RANK_KEYS = tuple(RankMemory.model_fields)
"""Each worker (GPU) logs its own; the record reports every rank and one engine-wide value."""
LOWEST_WINS = ("total_gpu_memory_gib", "kv_cache_gib")
"""The engine sizes every rank's pool from the smallest KV budget and GPU; other keys take the largest."""
INT_KEYS = ("tensor_parallel_size", "max_model_len", "num_gpu_blocks", "kv_cache_tokens", "max_running_requests")
TEXT_KEYS = ("vllm_version", "model", "dtype", "quantization", "kv_cache_dtype", "limit_mm_per_prompt")
KEYS = (*EngineSettings.model_fields, *PER_RANK_KEYS, "num_gpu_blocks", "kv_cache_tokens", "max_concurrency")
SGLANG_KEYS = ("free_before_weights_gib", "free_after_weights_gib", "free_after_pool_gib", "max_running_requests")
"""What only SGLang's lines state: free memory around the weights and the pool, the running cap."""
FREE_KEYS = SGLANG_KEYS[:3]
"""SGLang sizes the pool from the smallest free memory over the ranks: of several lines, the least counts."""


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


class RankName(Record):
    """Which worker logged the values beside it."""

    rank: str
    """`TP0`, `PP1_TP0`, `main` (the engine process itself) or `pid N` when the log never names the rank."""


class RankValues(RankMemory, RankName):
    """What one worker process (one GPU) logged: its name, then its numbers (pydantic puts the last base's
    fields first, so `--json` writes `rank` first)."""


class SglangArgs(Record):
    """The memory settings of SGLang's `server_args=ServerArgs(...)` line, by SGLang's own names; null where
    the line does not state one (`None`, or cut short before it)."""

    model_path: str | None = None
    dtype: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    tp_size: int | None = None
    pp_size: int | None = None
    dp_size: int | None = None
    enable_dp_attention: bool | None = None
    mem_fraction_static: float | None = None
    context_length: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int | None = None
    cuda_graph_max_bs: int | None = None
    disable_cuda_graph: bool | None = None
    page_size: int | None = None
    max_total_tokens: int | None = None
    max_running_requests: int | None = None
    speculative_algorithm: str | None = None
    complete: bool = True
    """False when the line was cut short (it does not end with `)`): only the pairs before the cut count."""


class StartupLog(RankMemory, EngineSettings):
    """Values exactly as the lines state them (GiB where the old lines say "GB"), null when not said: the
    settings, the engine-wide memory numbers, then these (pydantic puts the last base's fields first)."""

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
    free_before_weights_gib: float | None = None
    """SGLang `Load weight begin. avail mem=` (the pool's `total`; the least over ranks)."""
    free_after_weights_gib: float | None = None
    """SGLang `Load weight end. ... avail mem=` (the least over ranks)."""
    free_after_pool_gib: float | None = None
    """SGLang `Memory pool end. avail mem=` (the least over ranks)."""
    max_running_requests: int | None = None
    """SGLang `max_total_num_tokens=..., max_running_requests=N`."""
    server_args: SglangArgs | None = None
    """SGLang's `server_args=ServerArgs(...)` line, when the log holds one."""
