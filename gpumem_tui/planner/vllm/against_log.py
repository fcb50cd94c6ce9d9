"""A prediction held against a startup log: predicted vs stated, line by line, with the error."""

from __future__ import annotations

from gpumem_tui.planner.vllm.records import EnginePrediction
from gpumem_tui.records import Record
from gpumem_tui.units import GIB

# (label, the log's key, the prediction's value)
ROWS = [
    ("total GPU memory (GiB)", "total_gpu_memory_gib", lambda p: p.total_gpu_memory_bytes / GIB),
    ("weights (GiB)", "weights_gib", lambda p: p.weights_bytes / GIB),
    ("non-torch (GiB)", "non_torch_gib", lambda p: p.non_torch_bytes / GIB),
    ("activation peak (GiB)", "activation_peak_gib", lambda p: p.activation_peak_bytes / GIB),
    ("CUDA graphs, estimated (GiB)", "cudagraph_estimated_gib", lambda p: p.cudagraph_bytes / GIB),
    ("CUDA graphs, captured (GiB)", "cudagraph_gib", lambda p: p.cudagraph_bytes / GIB),
    ("KV cache (GiB)", "kv_cache_gib", lambda p: p.kv_cache_bytes / GIB),
    ("GPU blocks", "num_gpu_blocks", lambda p: p.num_gpu_blocks),
    ("KV cache tokens", "kv_cache_tokens", lambda p: p.kv_cache_tokens),
    ("max concurrency (x)", "max_concurrency", lambda p: p.max_concurrency),
]


class Versus(Record):
    """One line of the comparison; `error` is (predicted - stated) / stated, None when the log is silent."""

    label: str
    key: str
    predicted: float
    stated: float | None
    error: float | None


def versus(prediction: EnginePrediction, stated: dict) -> list[Versus]:
    rows = []
    for label, key, get in ROWS:
        value, real = float(get(prediction)), stated.get(key)
        error = (value - real) / real if real else None
        rows.append(Versus(label=label, key=key, predicted=value, stated=real, error=error))
    return rows
