"""A running SGLang engine's plan, by SGLang's own rules (planner/sglang): its pool is a fraction of the memory
free before the weights load, less what is left after them, so it is never planned with vLLM's arithmetic.
The settings are the ones the engine states of itself (`EngineRecord.sglang`, read from /get_server_info);
what it did not state is the release's default, said to be assumed. A plan set by hand keeps its model,
weights, KV cache, split and length and takes the rest from the engine, as `plan --engine sglang` would."""

from __future__ import annotations

from typing import Any

from gpumem_tui.catalog import GpuSpec, ModelSpec
from gpumem_tui.diagnosis.overlays import ManualPlan
from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.engine_records import SglangSettings as Stated
from gpumem_tui.planner.overlay import overlay_from_sglang
from gpumem_tui.planner.sglang import DEFAULT_VERSION, SglangPrediction, SglangSettings, predict
from gpumem_tui.planner.vllm.profile import torch_total_bytes
from gpumem_tui.text import literal
from gpumem_tui.units import GIB

UNSIZED = (
    "SGLang sizes its KV pool by its own rules, from settings its metrics do not carry (mem_fraction_static, "
    "context_length, ...): measured only here; its node plans it from /get_server_info (`gpumem-tui check` "
    "there, or its `gpumem-tui export`)"
)
"""Why the fleet gives a running SGLang engine no predicted plan: Prometheus holds none of its settings."""

SETTINGS = (
    ("version", "version"),
    ("tp", "tp_size"),
    ("pp", "pp_size"),
    ("dp", "dp_size"),
    ("enable_dp_attention", "enable_dp_attention"),
    ("dtype", "dtype"),
    ("quantization", "quantization"),
    ("kv_cache_dtype", "kv_cache_dtype"),
    ("mem_fraction_static", "mem_fraction_static"),
    ("context_length", "context_length"),
    ("chunked_prefill_size", "chunked_prefill_size"),
    ("cuda_graph_max_bs", "cuda_graph_max_bs"),
    ("disable_cuda_graph", "disable_cuda_graph"),
    ("page_size", "page_size"),
    ("max_total_tokens", "max_total_tokens"),
    ("max_running_requests", "max_running_requests"),
    ("speculative_algorithm", "speculative_algorithm"),
)
"""`planner.sglang.SglangSettings` field <- the server argument it is read from."""
BY_HAND = ("model", "quantization", "kv_cache_dtype", "tp", "context_length")
"""What a plan set by hand decides; the engine's stated settings give the rest."""


def sglang_plan(
    found: list[str],
    assumed: list[str],
    spec: ModelSpec,
    record: EngineRecord | None,
    gpu: GpuSpec,
    capacity: int,
    split: int,
    manual: ManualPlan | None = None,
    running: SglangPrediction | None = None,
) -> dict[str, Any]:
    """The fields of an SGLang engine's plan (`EnginePlan`'s) on `gpu` (its bar drawn at `capacity` bytes),
    `split` being the GPUs its processes hold; `running`: beside a hand-set plan, the engine's own prediction
    (its KV bytes a token count the measured pool). Raises ValueError where the stated settings cannot be sized."""
    own = record.sglang if record else None
    found, assumed = [*found, *stated(own)], list(assumed)
    settings = engine_settings(spec, gpu, own, split, manual)
    prediction = predict(settings)
    assumed += defaults_assumed(own, settings, prediction, split, manual)
    users = manual.users if manual else 1
    if manual is None:
        assumed.append("1 conversation at the max length (set a plan with --users for more)")
    context = context_bytes(settings, prediction)
    title = f"{spec.id} on {settings.tp} GPU(s), SGLang {settings.version}"
    label = "manual" if manual else "auto"
    overlay = overlay_from_sglang(prediction, capacity, context, label, title)
    if running is not None:
        overlay = overlay.model_copy(update={"measured_kv_bytes_per_token": running.cell_bytes})
    return {
        "users": users,
        "sglang_settings": settings,
        "sglang": prediction,
        "overlay": overlay,
        "found": found,
        "assumed": assumed,
        "context_assumed": manual is None and (own is None or own.context_length is None),
    }


def context_bytes(settings: SglangSettings, p: SglangPrediction) -> int:
    """What the engine holds before its weights load: what CUDA reports less what SGLang finds free then."""
    return max(0, torch_total_bytes(settings.gpu, settings.total_memory_bytes) - p.total_bytes)


def engine_settings(
    spec: ModelSpec, gpu: GpuSpec, stated: Stated | None, split: int, manual: ManualPlan | None = None
) -> SglangSettings:
    """SGLang's settings for the engine: the ones it stated, the hand-set plan's where one is set, the release's
    defaults (None) for the rest; the split its processes show where it stated none."""
    values: dict[str, Any] = {"tp": max(1, split)}
    for field, name in SETTINGS:
        value = getattr(stated, name) if stated is not None else None
        if value is not None:
            values[field] = value
    if manual is not None:
        values.update(quantization=manual.quantization, kv_cache_dtype=manual.kv_cache_dtype)
        values.update(tp=manual.tp or values["tp"], context_length=manual.max_model_len or values.get("context_length"))
    return SglangSettings(model=spec, gpu=gpu, chunk_stated="chunked_prefill_size" in values, **values)


def defaults_assumed(
    stated: Stated | None, settings: SglangSettings, p: SglangPrediction, split: int, manual: ManualPlan | None
) -> list[str]:
    """What the engine did not state and the plan took as the release's default, one line each."""
    said = {name for field, name in SETTINGS if stated is not None and getattr(stated, name) is not None}
    if stated is not None and stated.tp_size is not None:  # it sent its arguments: an unset one is None there
        said |= {"quantization"}
    if manual is not None:
        said |= {name for field, name in SETTINGS if field in BY_HAND}
    resolved = {
        "version": f"SGLang {DEFAULT_VERSION}'s sizing rules (the release it did not name)",
        "tp_size": f"tp_size {settings.tp}: the {split} GPU(s) its processes hold memory on",
        "mem_fraction_static": f"mem_fraction_static {p.mem_fraction_static:.3f}, the default ({p.fraction_rule})",
        "context_length": f"context_length {p.context_len:,}, the model's maximum as SGLang derives it (its default)",
        "chunked_prefill_size": f"chunked_prefill_size {p.chunked_prefill_size:,}, the release's default on this card",
        "cuda_graph_max_bs": f"cuda_graph_max_bs {p.cuda_graph_max_bs}, the release's default on this card",
        "max_running_requests": f"max_running_requests {p.max_running_requests:,}, from the pool",
        "kv_cache_dtype": "kv_cache_dtype auto (the model's dtype)",
        "quantization": "weights as the checkpoint ships them (no quantization stated)",
        "page_size": "page_size 1",
    }
    return [f"{line} (not stated by the engine)" for name, line in resolved.items() if name not in said]


def stated(settings: Stated | None) -> list[str]:
    """The settings the engine stated of itself, one line each, its text shown literally."""
    if settings is None:
        return []
    lines = [f"{name} {_value(getattr(settings, name))} (from /get_server_info)" for name in SHOWN]
    lines = [line for line, name in zip(lines, SHOWN, strict=True) if getattr(settings, name) is not None]
    if settings.tp_size is not None and settings.quantization is None:  # its arguments came: none was set
        lines.append("no quantization (from /get_server_info): weights as the checkpoint ships them")
    memory = [(label, getattr(settings, field)) for label, field in MEMORY]
    said = ", ".join(f"{label} {size / GIB:.2f} GiB" for label, size in memory if size is not None)
    if said:
        lines.append(f'SGLang\'s memory usage: {said} (it logs GiB as "GB")')
    return lines + [f"SGLang's answer: {literal(note)}" for note in settings.notes]


def _value(value: object) -> str:
    return literal(value) if isinstance(value, str) else f"{value:,}" if isinstance(value, int) else str(value)


SHOWN = (
    "version",
    "model_path",
    "tp_size",
    "dp_size",
    "mem_fraction_static",
    "max_total_num_tokens",
    "max_total_tokens",
    "max_running_requests",
    "chunked_prefill_size",
    "cuda_graph_max_bs",
    "page_size",
    "context_length",
    "kv_cache_dtype",
    "quantization",
)
"""The settings a plan lists as found, in this order."""
MEMORY = (("weights", "weights_bytes"), ("KV cache", "kv_cache_bytes"), ("CUDA graphs", "cuda_graph_bytes"))
