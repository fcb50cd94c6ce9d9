"""What a simulated engine would report about itself: the state a mock /metrics server serves."""

from __future__ import annotations

from typing import Literal

from gpumem_tui.records import Record

EnginePhase = Literal["waiting", "loading", "profiling", "capturing", "ready", "failed", "crashed"]


class EngineState(Record):
    """One simulated engine at one moment. Readings exist only once the engine serves (`phase == ready`)."""

    id: str
    engine: str
    model: str
    port: int
    pids: list[int]
    gpus: list[int]
    phase: EnginePhase
    error: str | None = None
    format: str
    planned_format: str | None = None
    tensor_parallel_size: int
    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    block_size: int
    cache_dtype: str
    weights_bytes_per_gpu: int
    num_gpu_blocks: int | None = None
    kv_pool_tokens: int | None = None
    kv_cache_bytes_per_gpu: int | None = None
    kv_usage_fraction: float | None = None
    requests_running: int | None = None
    requests_waiting: int | None = None
    preemptions_total: int | None = None
    cudagraph_bytes_per_gpu: int | None = None
    sglang: dict | None = None
    """An SGLang engine's settings as its server states them (`demo/engine_info.py`); None for vLLM."""

    @property
    def serving(self) -> bool:
        return self.phase == "ready"
