"""The fit matrix: for each model, format and GPU, the fewest GPUs that hold a modest working load."""

from __future__ import annotations

from gpumem_tui.catalog.schema import FormatSpec, GpuSpec, ModelSpec
from gpumem_tui.planner.budget import AMBER_FRACTION
from gpumem_tui.planner.records import PlanInput
from gpumem_tui.planner.serving import EngineOptions, serve
from gpumem_tui.records import Record

# The seed's table rule: 8 conversations of 8,192 tokens, 4 GB overhead per GPU, 90 % fill.
DEFAULT_USERS = 8
DEFAULT_CONTEXT = 8192


class FitCell(Record):
    """One cell: the fewest GPUs (None: not even 8), the spare on that split, amber under 5 % spare."""

    model: str
    weights_format: str
    kv_dtype: str
    gpu: str
    gpus: int | None
    spare_bytes: int | None
    spare_fraction: float | None
    amber: bool


def fit_cell(
    model: ModelSpec,
    fmt: FormatSpec,
    gpu: GpuSpec,
    users: int = DEFAULT_USERS,
    context: int = DEFAULT_CONTEXT,
    utilization: float = 0.9,
    overhead_bytes: int = 4 * 10**9,
    kv_dtype: str | None = None,
    engine: EngineOptions | None = None,
) -> FitCell:
    """The format decides the KV dtype unless one is given (16-bit KV for BF16 rows, FP8 for the rest).
    With an engine, its own sizing finds the split (the same search as `plan --engine`); the spare is then
    the share of its KV pool the load leaves."""
    inp = PlanInput(
        model=model,
        gpu=gpu,
        weights_format=fmt,
        kv_dtype=kv_dtype or fmt.kv_dtype,
        users=users,
        context=context,
        utilization=utilization,
        overhead_bytes=overhead_bytes,
    )
    serving = serve(inp, engine)
    fits = serving.fewest_gpus is not None  # else not even 8 GPUs: no spare to speak of
    return FitCell(
        model=model.id,
        weights_format=fmt.name,
        kv_dtype=inp.kv_dtype,
        gpu=gpu.key,
        gpus=serving.fewest_gpus,
        spare_bytes=serving.spare_bytes if fits else None,
        spare_fraction=serving.spare_fraction if fits else None,
        amber=fits and serving.spare_fraction < AMBER_FRACTION,
    )


def fit_matrix(models: list[ModelSpec], formats: list[FormatSpec], gpus: list[GpuSpec], **load) -> list[FitCell]:
    """Every model x format x GPU cell, in that order."""
    return [fit_cell(m, f, g, **load) for m in models for f in formats for g in gpus]
