"""Hand-built samples for the diagnosis tests: an H100, processes, a vLLM endpoint."""

from __future__ import annotations

from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.models import GpuRecord, ProcessRecord, Sample
from gpumem_tui.units import GIB

H100_TOTAL = 81_559 * 2**20
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
ENGINE_CMD = ["/usr/bin/python3", "/usr/local/bin/vllm", "serve", LLAMA_8B, "--max-model-len", "8192"]


def gpu(index: int = 0, used_gib: float = 70.0, **extra) -> GpuRecord:
    used = round(used_gib * GIB)
    fields = dict(
        index=index,
        name="NVIDIA H100 80GB HBM3",
        memory_total_bytes=H100_TOTAL,
        memory_used_bytes=used,
        memory_free_bytes=H100_TOTAL - used,
    )
    return GpuRecord(**{**fields, **extra})


def process(pid: int, gib: float, gpu_index: int = 0, **extra) -> ProcessRecord:
    return ProcessRecord(pid=pid, gpu_index=gpu_index, gpu_memory_bytes=round(gib * GIB), **extra)


def engine(pids=(2100,), state="ok", **record) -> EndpointStatus:
    fields = dict(
        engine="vllm",
        model=LLAMA_8B,
        kv_pool_tokens=442_864,
        block_size=16,
        cache_dtype="auto",
        gpu_memory_utilization=0.9,
        max_model_len=8192,
        kv_usage_fraction=0.2,
        requests_running=10,
        requests_waiting=0,
        preemptions_per_min=0.0,
    )
    records = [EngineRecord(**{**fields, **record})] if state != "down" else []
    return EndpointStatus(
        url="http://127.0.0.1:8000",
        state=state,
        pids=list(pids),
        records=records,
        error=None if state == "ok" else "HTTP 503 Service Unavailable",
    )


def sample(t: float = 1000.0, gpus=(), processes=(), engines=(), errors=()) -> Sample:
    return Sample(
        timestamp=t,
        hostname="node",
        source="test",
        gpus=list(gpus),
        processes=list(processes),
        engines=list(engines),
        errors=list(errors),
    )


def codes(findings, severity=None) -> set[str]:
    return {f.code for f in findings if severity is None or f.severity == severity}
