"""What a hand-set plan differs in from what the engine runs, judged by what decides memory: the
architecture (not the model's name), the bytes a weight takes (not the format's name), the KV cache
element's width, the split and the card. One answer for every finding and for the engine card."""

from __future__ import annotations

from collections.abc import Sequence

from gpumem_tui.catalog import ModelSpec
from gpumem_tui.diagnosis.autoplan import EnginePlan, planned, sized_with
from gpumem_tui.diagnosis.findings.records import Finding
from gpumem_tui.diagnosis.findings.starting import starting_endpoints
from gpumem_tui.planner.dtypes import PlanInputError, kv_dtype_bytes
from gpumem_tui.planner.params import count_params
from gpumem_tui.planner.sglang.records import SglangSettings
from gpumem_tui.planner.vllm import EngineSettings
from gpumem_tui.planner.vllm.loaded import dtype_bytes, quantization_of

FORMAT = "weight format"


def differences(plan: EnginePlan) -> list[str]:
    """Names of what differs between a hand-set plan and the engine it is drawn over (model, weight format,
    KV cache dtype, split, GPU); empty for a plan made from the engine, or one with nothing to compare."""
    settings, running = sized_with(plan), plan.running
    if running is None or settings is None or plan.endpoint is None:
        return []
    runs = sized_with(running)
    differ = []
    if runs is not None and architecture(settings.model) != architecture(runs.model):
        differ.append("model")
    elif runs is None and renamed(plan):
        differ.append("model")  # the running model is not known here: its name is all there is
    stated = running.launch_seen or running.sglang is not None  # SGLang states its quantization itself
    if runs is not None and stated and weight_width(settings) != weight_width(runs):
        differ.append(FORMAT)
    if runs is not None and kv_width(settings) != kv_width(runs):
        differ.append("KV cache dtype")
    split = len(running.gpu_indices)
    if split and split != settings.tp:
        differ.append("split")
    if plan.card and settings.gpu.key != plan.card:
        differ.append("GPU")
    return differ


def mismatched(plan: EnginePlan) -> bool:
    """The plan is for something else than what runs: `plan_mismatch` says so, and its numbers are not held
    against the engine's. A plan that differs only in weight format is the intent the engine missed (the
    wrong precision loaded): it is compared, and `weights_mismatch` says so."""
    differ = differences(plan)
    return bool(differ) and differ != [FORMAT]


def renamed(plan: EnginePlan) -> bool:
    """The plan names another model than the engine serves (whatever their architectures)."""
    runs = plan.running.model if plan.running else None
    return bool(runs and plan.model and runs.lower() != plan.model.lower())


def architecture(spec: ModelSpec) -> tuple:
    """What of a model decides its memory: its shape and its parameter count, not its name."""
    shape = (spec.layers, spec.hidden_size, spec.attention_heads, spec.kv_heads, spec.head_size, spec.vocab_size)
    return shape, spec.mla, spec.sliding_window, count_params(spec)


def weight_width(settings: EngineSettings | SglangSettings) -> tuple:
    """How wide a weight loads: the quantization's scope and bits, else the 16- or 32-bit dtype."""
    try:
        quantized = quantization_of(settings.quantization, settings.model)
        return quantized or ("all", 8.0 * dtype_bytes(settings.dtype))
    except PlanInputError:
        return ("named", (settings.quantization or "").lower())


def kv_width(settings: EngineSettings | SglangSettings) -> int | str:
    """Bytes one cached KV element takes (`auto`: the 16-bit serving dtype)."""
    try:
        return kv_dtype_bytes(settings.kv_cache_dtype)
    except PlanInputError:
        return settings.kv_cache_dtype.lower()


def compared(plans: list[EnginePlan], findings: Sequence[Finding] = ()) -> tuple[int, int]:
    """(plans compared, engines running), what `all_clear` words for the TUI and `check` alike. A plan counts
    as compared when its numbers were held against what runs: it has a prediction, is not for something
    else, and its engine is not still loading."""
    loading = starting_endpoints(list(findings))
    held = sum(planned(p) is not None and not mismatched(p) and p.endpoint not in loading for p in plans)
    return held, sum(p.endpoint is not None for p in plans)
