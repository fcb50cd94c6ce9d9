"""Preemptions per minute from two successive readings of the cumulative counter."""

from __future__ import annotations

from gpumem_tui.engine_records import EngineRecord


class PreemptionRates:
    """Remembers the last counter value per served model and fills `preemptions_per_min`."""

    def __init__(self) -> None:
        self._last: dict[tuple, tuple[float, float]] = {}

    def apply(self, records: list[EngineRecord], now: float) -> list[EngineRecord]:
        return [self._one(r, now) for r in records]

    def _one(self, record: EngineRecord, now: float) -> EngineRecord:
        key = (record.engine, record.model, record.engine_index)
        total = record.preemptions_total
        previous = self._last.get(key)
        if total is None:
            return record
        self._last[key] = (total, now)
        if previous is None or now <= previous[1] or total < previous[0]:
            return record  # first reading, or the counter restarted with the engine
        rate = (total - previous[0]) / (now - previous[1]) * 60.0
        return record.model_copy(update={"preemptions_per_min": rate})
