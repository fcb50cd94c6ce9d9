"""A running SGLang engine's plan. SGLang sizes its KV pool by its own rules (a fraction of the memory free
before the weights load, less what is left after them), so it is never planned with vLLM's arithmetic.
`sglang_plan` is the one place where SGLang's startup model is to be called with the engine's own settings
(`EngineRecord.sglang`, read from /get_server_info); until that model is here, the plan says so, lists the
settings the engine stated and shows the measurement only."""

from __future__ import annotations

from typing import Any

from gpumem_tui.catalog import ModelSpec
from gpumem_tui.engine_records import EngineRecord, SglangSettings
from gpumem_tui.text import literal
from gpumem_tui.units import GIB

UNSIZED = (
    "SGLang sizes its KV pool by its own rules, not vLLM's: measured only here (the plain method: `gpumem-tui "
    "plan`; SGLang's own sizing: see `gpumem-tui plan --engine sglang`)"
)
"""Why a running SGLang engine has no predicted plan, on a node and in the fleet alike."""
BY_HAND = "the plan set by hand is sized by vLLM's rules, so it is not applied to this SGLang engine"


def sglang_plan(found: list[str], spec: ModelSpec | None, record: EngineRecord | None) -> dict[str, Any]:
    """The fields of a running SGLang engine's plan (`EnginePlan`'s, `found`: its facts so far). The hook for
    SGLang's own sizing: call it here with `spec`, `record.sglang` and the card, and return its prediction and
    overlay beside what was found."""
    del spec  # what SGLang's model will size, with the settings below
    return {"missing": UNSIZED, "found": [*found, *stated(record.sglang if record else None)]}


def stated(settings: SglangSettings | None) -> list[str]:
    """The settings the engine stated of itself, one line each, its text shown literally."""
    if settings is None:
        return []
    lines = [f"{name} {_value(getattr(settings, name))} (from /get_server_info)" for name in SHOWN]
    lines = [line for line, name in zip(lines, SHOWN, strict=True) if getattr(settings, name) is not None]
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
)
"""The settings a plan lists as found, in this order."""
MEMORY = (("weights", "weights_bytes"), ("KV cache", "kv_cache_bytes"), ("CUDA graphs", "cuda_graph_bytes"))
