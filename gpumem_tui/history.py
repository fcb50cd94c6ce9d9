"""Bounded history of samples: per-GPU and per-process memory with timestamps, per-engine KV usage.

Every series is a fixed-size ring buffer, and a process that has not been seen for a whole window is
dropped, so memory stays flat however long the app runs.
"""

from __future__ import annotations

from collections import deque

from gpumem_tui.models import Sample

DEFAULT_POINTS = 600  # ten minutes at 1 s; memory stays flat however long the app runs

Point = tuple[float, int]
"""(timestamp in seconds since the epoch, bytes)."""


class History:
    """The last `points` readings of each GPU's used bytes, each process's bytes per GPU and each engine's
    KV usage fraction."""

    def __init__(self, points: int = DEFAULT_POINTS):
        self.points = points
        self.gpu_used: dict[int, deque[float]] = {}
        self.kv_usage: dict[str, deque[float]] = {}
        self.timestamps: deque[float] = deque(maxlen=points)
        self.gpu_points: dict[int, deque[Point]] = {}
        self.process_points: dict[tuple[int, int], deque[Point]] = {}
        """(gpu index, pid) -> readings of that process's memory on that GPU."""

    def add(self, sample: Sample) -> None:
        now = sample.timestamp
        self.timestamps.append(now)
        for gpu in sample.gpus:
            if gpu.memory_used_bytes is not None:
                self._series(self.gpu_used, gpu.index).append(float(gpu.memory_used_bytes))
                self._series(self.gpu_points, gpu.index).append((now, gpu.memory_used_bytes))
        for process in sample.processes:
            if process.gpu_memory_bytes is not None:
                self._series(self.process_points, (process.gpu_index, process.pid)).append(
                    (now, process.gpu_memory_bytes)
                )
        for endpoint in sample.engines:
            for record in endpoint.records:
                if record.kv_usage_fraction is not None:
                    key = f"{endpoint.url} {record.model or ''}".strip()
                    self._series(self.kv_usage, key).append(record.kv_usage_fraction)
        self._forget_gone()

    def _series(self, table: dict, key) -> deque:
        if key not in table:
            table[key] = deque(maxlen=self.points)
        return table[key]

    def _forget_gone(self) -> None:
        """Drop processes whose last reading is older than the oldest timestamp kept."""
        oldest = self.timestamps[0]
        for key in [k for k, series in self.process_points.items() if series[-1][0] < oldest]:
            del self.process_points[key]

    def gpu(self, index: int) -> list[float]:
        return list(self.gpu_used.get(index, ()))

    def engine(self, key: str) -> list[float]:
        return list(self.kv_usage.get(key, ()))

    def gpu_since(self, index: int, since: float) -> list[Point]:
        """Readings of one GPU's used bytes at or after `since` (seconds since the epoch)."""
        return [point for point in self.gpu_points.get(index, ()) if point[0] >= since]

    def process_since(self, gpu_index: int, pid: int, since: float) -> list[Point]:
        return [point for point in self.process_points.get((gpu_index, pid), ()) if point[0] >= since]
