"""Which plan is drawn over which GPU: a plan the user set ("manual") on the GPUs its engine uses."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gpumem_tui.catalog import Catalog, GpuSpec, ModelSpec
from gpumem_tui.measured import engine_pids
from gpumem_tui.models import Sample
from gpumem_tui.planner.overlay import GpuOverlay, overlay_from_engine
from gpumem_tui.planner.vllm import DEFAULT_VERSION, EnginePrediction, EngineSettings, predict
from gpumem_tui.units import MIB


class ManualPlan(BaseModel):
    """A plan from the command line or the planner screen; it wins over one inferred from the node."""

    model_config = ConfigDict(frozen=True)

    model: ModelSpec
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    max_model_len: int | None = Field(default=None, gt=0)
    users: int = Field(default=1, ge=0)
    utilization: float = Field(default=0.9, gt=0, le=1)
    tp: int | None = Field(default=None, gt=0)
    version: str = DEFAULT_VERSION


def gpu_spec_for(sample_gpu_name: str | None, total_bytes: int | None, catalog: Catalog) -> GpuSpec | None:
    """The catalog GPU for a live card by its NVML name, else one made from the reported total."""
    spec = catalog.gpu_by_nvml_name(sample_gpu_name) if sample_gpu_name else None
    if spec is None and total_bytes:
        spec = GpuSpec(key=sample_gpu_name or "this GPU", total_mib=max(1, total_bytes // MIB))
    return spec


def engine_gpus(sample: Sample) -> list[int]:
    """GPUs that engine processes hold memory on, in order."""
    pids = engine_pids(sample)
    return sorted({p.gpu_index for p in sample.processes if p.pid in pids})


def manual_overlays(
    plan: ManualPlan, sample: Sample, catalog: Catalog
) -> tuple[dict[int, GpuOverlay], EnginePrediction | None]:
    """The plan drawn over the GPUs an engine uses (or the first `tp` GPUs when none is found)."""
    live = [g for g in sample.gpus if not g.lost]
    if not live:
        return {}, None
    targets = engine_gpus(sample) or [g.index for g in live]
    tp = plan.tp or len(engine_gpus(sample)) or 1
    first = next((g for g in live if g.index == targets[0]), live[0])
    gpu = gpu_spec_for(first.name, first.memory_total_bytes, catalog)
    if gpu is None:
        return {}, None
    prediction = predict(
        EngineSettings(
            model=plan.model,
            gpu=gpu,
            version=plan.version,
            tp=tp,
            quantization=plan.quantization,
            kv_cache_dtype=plan.kv_cache_dtype,
            utilization=plan.utilization,
            max_model_len=plan.max_model_len,
        )
    )
    capacity = first.memory_total_bytes or gpu.capacity_bytes
    title = f"{plan.model.id} on {tp} GPU(s), vLLM {plan.version}"
    overlay = overlay_from_engine(prediction, capacity, tp, "manual", title)
    return {index: overlay for index in targets[:tp]}, prediction
