"""Planned vs measured for one GPU: the rows the overlay table shows, each with its difference."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.measured import MeasuredSlice
from gpumem_tui.planner.overlay import GpuOverlay


class CompareRow(BaseModel):
    """One comparison: a planned and a measured size (None where there is nothing to read)."""

    model_config = ConfigDict(frozen=True)

    name: str
    planned_bytes: int | None
    measured_bytes: int | None

    @property
    def difference_bytes(self) -> int | None:
        if self.planned_bytes is None or self.measured_bytes is None:
            return None
        return self.measured_bytes - self.planned_bytes


def compare_rows(
    overlay: GpuOverlay, slices: list[MeasuredSlice], engine: EngineRecord | None, tp: int = 1
) -> list[CompareRow]:
    """The engine's own memory, its KV pool (engine metrics x the plan's bytes per token), other
    processes, memory no process accounts for, and free."""
    by_kind: dict[str, int] = {}
    for piece in slices:
        by_kind[piece.kind] = by_kind.get(piece.kind, 0) + piece.bytes
    engine_bytes = by_kind.get("engine")
    rows = [CompareRow(name="engine process", planned_bytes=overlay.engine_bytes, measured_bytes=engine_bytes)]
    rows.append(
        CompareRow(
            name="KV pool", planned_bytes=overlay.kv_pool_bytes, measured_bytes=_measured_kv(overlay, engine, tp)
        )
    )
    rows.append(CompareRow(name="other processes", planned_bytes=0, measured_bytes=by_kind.get("process", 0)))
    rows.append(CompareRow(name="no process", planned_bytes=0, measured_bytes=by_kind.get("unattributed", 0)))
    rows.append(CompareRow(name="free", planned_bytes=overlay.free_bytes, measured_bytes=by_kind.get("free")))
    return rows


def _measured_kv(overlay: GpuOverlay, engine: EngineRecord | None, tp: int) -> int | None:
    """The engine's pool in tokens, turned into bytes per GPU with the plan's bytes per token."""
    if engine is None or engine.kv_pool_tokens is None or not overlay.kv_pool_tokens:
        return None
    return round(engine.kv_pool_tokens * overlay.kv_pool_bytes / overlay.kv_pool_tokens)
