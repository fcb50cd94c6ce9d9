"""Bounded history of samples: per-GPU and per-process memory with timestamps, per-engine KV usage.

Every series keeps the readings of the last `window_s` seconds, and at most `points` of them (a hard cap
for short refresh intervals); a process not seen for a whole window is dropped. Memory stays flat however
long the app runs. A recording's walk passes `window_s=None, points=None` to keep all of it.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from gpumem_tui.diagnosis.engine_values import plausible
from gpumem_tui.models import Sample

WINDOW_S = 660.0
"""Eleven minutes by default: the app sizes its own by the forensics window (`forensics.memory_window_s`)."""
DEFAULT_POINTS = 2640
"""The window at 0.25 s, the shortest refresh interval."""

Point = tuple[float, int]
"""(timestamp in seconds since the epoch, bytes)."""


class History:
    """The readings of the last `window_s` seconds (at most `points` per series) of each GPU's used bytes,
    each process's bytes per GPU and each engine's KV usage fraction."""

    def __init__(self, points: int | None = DEFAULT_POINTS, window_s: float | None = WINDOW_S):
        self.points, self.window_s = points, window_s
        self.timestamps: deque[float] = deque(maxlen=points)
        self.gpu_points: dict[int, deque[Point]] = {}
        self.process_points: dict[tuple[int, int], deque[Point]] = {}
        """(gpu index, pid) -> readings of that process's memory on that GPU."""
        self.kv_points: dict[str, deque[tuple[float, float]]] = {}
        """'url model' -> (timestamp, KV usage fraction)."""

    def add(self, sample: Sample) -> None:
        now = sample.timestamp
        self.timestamps.append(now)
        for gpu in sample.gpus:
            if gpu.memory_used_bytes is not None:
                self._series(self.gpu_points, gpu.index).append((now, gpu.memory_used_bytes))
        for process in sample.processes:
            if process.gpu_memory_bytes is not None:
                self._series(self.process_points, (process.gpu_index, process.pid)).append(
                    (now, process.gpu_memory_bytes)
                )
        for endpoint in sample.engines:
            for record in map(plausible, endpoint.records):  # a usage that cannot be true is no point
                if record.kv_usage_fraction is not None:
                    key = f"{endpoint.url} {record.model or ''}".strip()
                    self._series(self.kv_points, key).append((now, record.kv_usage_fraction))
        self._forget(now)

    def _series(self, table: dict, key) -> deque:
        if key not in table:
            table[key] = deque(maxlen=self.points)
        return table[key]

    def _forget(self, now: float) -> None:
        """Drop readings older than the window, then series left empty or last read before the oldest
        timestamp kept (a process that exited a window ago)."""
        since = -float("inf") if self.window_s is None else now - self.window_s
        while self.timestamps and self.timestamps[0] < since:
            self.timestamps.popleft()
        oldest = self.timestamps[0]
        tables: tuple[dict[Any, deque[Any]], ...] = (self.gpu_points, self.process_points, self.kv_points)
        for table in tables:
            for key, series in list(table.items()):
                while series and series[0][0] < since:
                    series.popleft()
                if not series or series[-1][0] < oldest:
                    del table[key]

    @property
    def first_timestamp(self) -> float | None:
        """The oldest sample kept: a process read then may have been there before anyone looked."""
        return self.timestamps[0] if self.timestamps else None

    def gpu(self, index: int) -> list[float]:
        return [float(used) for _, used in self.gpu_points.get(index, ())]

    def engine(self, key: str) -> list[float]:
        return [fraction for _, fraction in self.kv_points.get(key, ())]

    def gpu_since(self, index: int, since: float) -> list[Point]:
        """Readings of one GPU's used bytes at or after `since` (seconds since the epoch)."""
        return [point for point in self.gpu_points.get(index, ()) if point[0] >= since]

    def process_since(self, gpu_index: int, pid: int, since: float) -> list[Point]:
        return [point for point in self.process_points.get((gpu_index, pid), ()) if point[0] >= since]
