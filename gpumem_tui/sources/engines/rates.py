"""Preemptions per minute from two successive readings of the cumulative counter."""

from __future__ import annotations

from gpumem_tui.engine_records import EngineRecord


class PreemptionRates:
    """Remembers the last counter value per served model and fills `preemptions_per_min`.

    Only the models of the latest payload are remembered: an engine that reports a new model name on
    every poll must not make this grow for as long as the app runs.
    """

    def __init__(self) -> None:
        self._last: dict[tuple, tuple[float, float]] = {}

    def __len__(self) -> int:
        return len(self._last)

    def apply(self, records: list[EngineRecord], now: float) -> list[EngineRecord]:
        previous, self._last = self._last, {}
        return [self._one(r, now, previous) for r in records]

    def _one(self, record: EngineRecord, now: float, last: dict[tuple, tuple[float, float]]) -> EngineRecord:
        key = (record.engine, record.model, record.engine_index)
        total = record.preemptions_total
        previous = last.get(key)
        if total is None:
            if previous is not None:
                self._last[key] = previous  # a reading missing once: the next one still gives a rate
            return record
        self._last[key] = (total, now)
        if previous is None or now <= previous[1] or total < previous[0]:
            return record  # first reading, or the counter restarted with the engine
        rate = (total - previous[0]) / (now - previous[1]) * 60.0
        return record.model_copy(update={"preemptions_per_min": rate})
