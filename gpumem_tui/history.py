"""Bounded history of samples: per-GPU memory used and per-engine KV usage, in fixed-size ring buffers."""

from __future__ import annotations

from collections import deque

from gpumem_tui.models import Sample

DEFAULT_POINTS = 600  # ten minutes at 1 s; memory stays flat however long the app runs


class History:
    """The last `points` readings of each GPU's used bytes and each engine's KV usage fraction."""

    def __init__(self, points: int = DEFAULT_POINTS):
        self.points = points
        self.gpu_used: dict[int, deque[float]] = {}
        self.kv_usage: dict[str, deque[float]] = {}
        self.timestamps: deque[float] = deque(maxlen=points)

    def add(self, sample: Sample) -> None:
        self.timestamps.append(sample.timestamp)
        for gpu in sample.gpus:
            if gpu.memory_used_bytes is not None:
                self._series(self.gpu_used, gpu.index).append(float(gpu.memory_used_bytes))
        for endpoint in sample.engines:
            for record in endpoint.records:
                if record.kv_usage_fraction is not None:
                    key = f"{endpoint.url} {record.model or ''}".strip()
                    self._series(self.kv_usage, key).append(record.kv_usage_fraction)

    def _series(self, table: dict, key) -> deque[float]:
        if key not in table:
            table[key] = deque(maxlen=self.points)
        return table[key]

    def gpu(self, index: int) -> list[float]:
        return list(self.gpu_used.get(index, ()))

    def engine(self, key: str) -> list[float]:
        return list(self.kv_usage.get(key, ()))
