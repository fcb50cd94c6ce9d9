"""A plan the user set ("manual"): its record, and vLLM's settings for it on a node's GPU through the one
planning path (`planner.serving.serve`), as `plan --engine vllm` gives them for the same options."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpumem_tui.catalog import Catalog, GpuSpec, ModelSpec
from gpumem_tui.models import Sample
from gpumem_tui.planner.records import PlanInput
from gpumem_tui.planner.serving import EngineOptions, engine_settings, engine_split, format_of, resolve_weights
from gpumem_tui.planner.vllm import DEFAULT_VERSION, EngineSettings
from gpumem_tui.records import Record
from gpumem_tui.units import MIB

DEFAULT_MAX_LEN = 2048  # vLLM's own when a model states no maximum

PlanSource = Literal["command line", "planner screen", "scenario"]


class ManualPlan(Record):
    """A plan from the command line or the planner screen; it wins over one inferred from the node."""

    model: ModelSpec
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    max_model_len: int | None = Field(default=None, gt=0)
    users: int = Field(default=1, ge=0)
    utilization: float = Field(default=0.9, gt=0, le=1)
    tp: int | None = Field(default=None, gt=0)
    version: str = DEFAULT_VERSION
    gpu: GpuSpec | None = None
    """The GPU the plan was sized for (the planner screen's choice); None: the card it is drawn over."""
    source: PlanSource = "command line"
    """Where the plan came from, so advice about it names what the user can change: --model and its
    options, the planner screen (p), or the demo's scenario (the plan it was made with)."""

    @classmethod
    def with_weights(cls, catalog: Catalog, model: ModelSpec, weights: str | None, **options: object) -> ManualPlan:
        """The plan for `model` with its weights named as `--weights` takes them: a catalog format (bf16, fp8,
        int4, ...) or a vLLM method (awq, gptq, w8a8); None: the checkpoint's own. The command line, the
        planner screen and a scenario's `planned_format` all make their plan here, so one name is one plan."""
        return cls.model_validate(
            {"model": model, "quantization": resolve_weights(catalog, model, weights)[1], **options}
        )


def gpu_spec_for(sample_gpu_name: str | None, total_bytes: int | None, catalog: Catalog) -> GpuSpec | None:
    """The catalog GPU for a live card by its NVML name, else one made from the reported total."""
    spec = catalog.gpu_by_nvml_name(sample_gpu_name) if sample_gpu_name else None
    if spec is None and total_bytes:
        spec = GpuSpec(key=sample_gpu_name or "this GPU", total_mib=max(1, total_bytes // MIB))
    return spec


def manual_request(
    plan: ManualPlan, gpu: GpuSpec, catalog: Catalog, running_split: int = 0, running_max_len: int | None = None
) -> tuple[PlanInput, EngineOptions]:
    """The manual plan as the request `plan --engine vllm` builds from the same options, on this GPU: its
    split, else the running engine's, else the fewest that hold its load; its length, else the engine's."""
    method = plan.quantization
    weights = format_of(method, plan.model)
    context = plan.max_model_len or running_max_len or plan.model.max_context or DEFAULT_MAX_LEN
    inp = PlanInput(
        model=plan.model,
        gpu=gpu,
        weights_format=catalog.format(weights),
        kv_dtype=plan.kv_cache_dtype,
        context=context,
        users=plan.users,
        gpus=plan.tp or running_split or None,
        utilization=plan.utilization,
    )
    return inp, EngineOptions(version=plan.version, quantization=method)


def manual_settings(
    plan: ManualPlan,
    gpu: GpuSpec,
    catalog: Catalog,
    running_split: int = 0,
    running_max_len: int | None = None,
    block_size: int | None = None,
) -> EngineSettings:
    """vLLM's settings for the manual plan on this GPU, by the same rules as `serve`: the split and values
    `plan --engine vllm` would use for the same options (`block_size`: the running engine's)."""
    inp, options = manual_request(plan, gpu, catalog, running_split, running_max_len)
    settings = engine_settings(inp, options, engine_split(inp, options))
    return settings.model_copy(update={"block_size": block_size}) if block_size else settings


def manual_split(plan: ManualPlan, sample: Sample, catalog: Catalog) -> int:
    """The split a manual plan takes on a node where no engine runs: its own, else the fewest of the node's
    first GPU that hold its load."""
    first = next((g for g in sample.gpus if g.readable), None)
    gpu = gpu_spec_for(first.name, first.memory_total_bytes, catalog) if first else None
    if plan.tp or gpu is None:
        return plan.tp or 1
    return manual_settings(plan, gpu, catalog).tp
