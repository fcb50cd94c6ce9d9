"""Which plan is drawn over which GPU: a plan the user set ("manual") on the GPUs its engine uses."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gpumem_tui.catalog import Catalog, GpuSpec, ModelSpec
from gpumem_tui.measured import engine_pids
from gpumem_tui.models import Sample
from gpumem_tui.planner.overlay import GpuOverlay, overlay_from_engine
from gpumem_tui.planner.records import PlanInput
from gpumem_tui.planner.serving import QUANTIZATION_TO_FORMAT, EngineOptions, Serving, default_format, serve
from gpumem_tui.planner.vllm import DEFAULT_VERSION, EnginePrediction
from gpumem_tui.units import MIB

DEFAULT_MAX_LEN = 2048  # vLLM's own when a model states no maximum


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


def manual_request(plan: ManualPlan, gpu: GpuSpec, catalog: Catalog, running_split: int = 0,
                   running_max_len: int | None = None) -> tuple[PlanInput, EngineOptions]:
    """The manual plan as the request `plan --engine vllm` builds from the same options, on this GPU: its
    split, else the running engine's, else the fewest that hold its load; its length, else the engine's."""
    method = plan.quantization
    weights = QUANTIZATION_TO_FORMAT.get(method or "") or ("bf16" if method == "none" else default_format(plan.model))
    context = plan.max_model_len or running_max_len or plan.model.max_context or DEFAULT_MAX_LEN
    inp = PlanInput(model=plan.model, gpu=gpu, weights_format=catalog.format(weights), kv_dtype=plan.kv_cache_dtype,
                    context=context, users=plan.users, gpus=plan.tp or running_split or None,
                    utilization=plan.utilization)
    return inp, EngineOptions(version=plan.version, quantization=method)


def manual_serving(plan: ManualPlan, gpu: GpuSpec, catalog: Catalog, running_split: int = 0,
                   running_max_len: int | None = None) -> Serving:
    """The manual plan through the one planning path (`serve`), decided by vLLM's sizing."""
    return serve(*manual_request(plan, gpu, catalog, running_split, running_max_len))


def manual_overlays(
    plan: ManualPlan, sample: Sample, catalog: Catalog
) -> tuple[dict[int, GpuOverlay], EnginePrediction | None]:
    """The plan drawn over the GPUs an engine uses (or the first GPUs of its split when none is found)."""
    live = [g for g in sample.gpus if not g.lost]
    if not live:
        return {}, None
    targets = engine_gpus(sample) or [g.index for g in live]
    first = next((g for g in live if g.index == targets[0]), live[0])
    gpu = gpu_spec_for(first.name, first.memory_total_bytes, catalog)
    if gpu is None:
        return {}, None
    answer = manual_serving(plan, gpu, catalog, len(engine_gpus(sample))).engine
    assert answer is not None
    prediction, tp = answer.prediction, answer.tp
    capacity = first.memory_total_bytes or gpu.capacity_bytes
    title = f"{plan.model.id} on {tp} GPU(s), vLLM {plan.version}"
    overlay = overlay_from_engine(prediction, capacity, tp, "manual", title)
    return {index: overlay for index in targets[:tp]}, prediction
