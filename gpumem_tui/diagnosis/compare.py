"""Planned vs measured for one GPU: the rows the overlay table shows, each with its difference."""

from __future__ import annotations

from gpumem_tui.diagnosis.measured import MeasuredSlice
from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.planner.overlay import GpuOverlay
from gpumem_tui.records import Record


class CompareRow(Record):
    """One comparison: a planned and a measured size (None where there is nothing to read)."""

    name: str
    planned_bytes: int | None
    measured_bytes: int | None
    loading: bool = False
    """The engine is still loading: the measured size is on its way to the plan, not apart from it."""

    @property
    def difference_bytes(self) -> int | None:
        if self.planned_bytes is None or self.measured_bytes is None:
            return None
        return self.measured_bytes - self.planned_bytes


def compare_rows(
    overlay: GpuOverlay, slices: list[MeasuredSlice], engine: EngineRecord | None, loading: bool = False
) -> list[CompareRow]:
    """The engine's own memory, its KV pool (engine metrics x the running model's bytes per token), other
    processes, memory no process accounts for, and free. While the engine loads, its rows and free are
    marked `loading`: their gap is progress, not a difference."""
    by_kind: dict[str, int] = {}
    for piece in slices:
        by_kind[piece.kind] = by_kind.get(piece.kind, 0) + piece.bytes
    engine_bytes = by_kind.get("engine")
    kv = measured_kv(overlay, engine)
    return [
        CompareRow(
            name="engine process", planned_bytes=overlay.engine_bytes, measured_bytes=engine_bytes, loading=loading
        ),
        CompareRow(name="KV pool", planned_bytes=overlay.kv_pool_bytes, measured_bytes=kv, loading=loading),
        CompareRow(name="other processes", planned_bytes=0, measured_bytes=by_kind.get("process", 0)),
        CompareRow(name="no process", planned_bytes=0, measured_bytes=by_kind.get("unattributed", 0)),
        CompareRow(name="free", planned_bytes=overlay.free_bytes, measured_bytes=by_kind.get("free"), loading=loading),
    ]


def measured_kv(overlay: GpuOverlay, engine: EngineRecord | None) -> int | None:
    """The engine's pool in tokens, turned into bytes per GPU with the running model's bytes per token
    (the plan's, when the overlay does not carry them)."""
    if engine is None or engine.kv_pool_tokens is None:
        return None
    if overlay.measured_kv_bytes_per_token is not None:
        return engine.kv_pool_tokens * overlay.measured_kv_bytes_per_token
    if not overlay.kv_pool_tokens:
        return None
    return round(engine.kv_pool_tokens * overlay.kv_pool_bytes / overlay.kv_pool_tokens)
