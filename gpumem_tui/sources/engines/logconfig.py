"""Settings stated inside startup lines: vLLM's engine config and non-default args, SGLang's ServerArgs."""

from __future__ import annotations

import ast
import math
import re

from gpumem_tui.sources.engines.startup_log import SglangArgs

_PAIR = re.compile(r"""(?<!\w)(\w+)=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^,()\[\]{}]*)""")
_PROFILE_PAIR = re.compile(r"(?<!\w)(\w+)=(-?\d{1,15}(?:\.\d{1,15})?)(?:GiB\b|(?=[,\s.]|$))")
_DICT_PAIR = re.compile(r"""'(\w+)':\s*('(?:[^'\\]|\\.)*'|[^,}]+)""")

VLLM_CONFIG = {
    "model": "model",
    "dtype": "dtype",
    "max_seq_len": "max_model_len",
    "tensor_parallel_size": "tensor_parallel_size",
    "quantization": "quantization",
    "kv_cache_dtype": "kv_cache_dtype",
}
VLLM_ARGS = {
    "model": "model",
    "dtype": "dtype",
    "max_model_len": "max_model_len",
    "tensor_parallel_size": "tensor_parallel_size",
    "quantization": "quantization",
    "kv_cache_dtype": "kv_cache_dtype",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "limit_mm_per_prompt": "limit_mm_per_prompt",
}
PROFILE_064 = {
    "total_gpu_memory": "total_gpu_memory_gib",
    "non_torch_memory": "non_torch_gib",
    "kv_cache_size": "kv_cache_gib",
    "gpu_memory_utilization": "gpu_memory_utilization",
}
SGLANG_ARGS = {
    "model_path": "model",
    "dtype": "dtype",
    "context_length": "max_model_len",
    "tp_size": "tensor_parallel_size",
    "quantization": "quantization",
    "kv_cache_dtype": "kv_cache_dtype",
    "mem_fraction_static": "gpu_memory_utilization",
}


def key_values(text: str, wanted: dict[str, str]) -> dict[str, str | None]:
    """`a='x', b=None, c=3` -> output keys; the first occurrence wins (nested configs repeat names later)."""
    out: dict[str, str | None] = {}
    for match in _PAIR.finditer(text):
        name, raw = match.group(1), match.group(2).strip()
        if name in wanted and wanted[name] not in out:
            out[wanted[name]] = _plain(raw)
    return out


def server_args_pairs(text: str) -> tuple[dict[str, str | None], bool]:
    """SGLang's `ServerArgs(a='x', b=None, ...)` body as raw pairs (the first occurrence wins), and whether
    the line is whole. A pair counts only when a `,` or the closing `)` follows it: a line a collector cut
    short loses the pair it cut, never reads half a number or half a path. Quoted text stays as written,
    escapes and all (never decoded into a newline)."""
    body = text.rstrip()
    out: dict[str, str | None] = {}
    for match in _PAIR.finditer(body):
        after = body[match.end() :].lstrip()
        if not after.startswith((",", ")")):
            continue
        name = match.group(1)
        if name not in out:
            out[name] = _plain(match.group(2).strip())
    return out, body.endswith(")")


LIMIT = 1e15
"""No setting is this large: a larger number is no reading."""


def sglang_args(text: str) -> SglangArgs:
    """The memory settings of a `ServerArgs(...)` body, typed; a value that is not of its type is null."""
    pairs, complete = server_args_pairs(text)
    values: dict[str, object] = {}
    for name, field in SglangArgs.model_fields.items():
        raw = pairs.get(name)
        if raw is None or name == "complete":
            continue
        values[name] = _typed(raw, field.annotation)
    return SglangArgs(**values, complete=complete)


def _typed(raw: str, annotation: object) -> object:
    if annotation == bool | None:
        return {"True": True, "False": False}.get(raw)
    if annotation == str | None:
        return raw
    try:
        value = int(raw) if annotation == int | None else float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) and abs(value) <= LIMIT else None


def profile_values(text: str) -> dict[str, str]:
    """`total_gpu_memory=23.58GiB initial_memory_usage=... gpu_memory_utilization=0.90` -> output keys."""
    out = {}
    for match in _PROFILE_PAIR.finditer(text):
        key = PROFILE_064.get(match.group(1))
        if key is not None:
            out[key] = match.group(2)
    return out


def dict_values(text: str, wanted: dict[str, str]) -> dict[str, str | None]:
    """A Python dict literal (possibly cut short by a log collector) -> output keys."""
    try:
        parsed = ast.literal_eval(text)
        pairs = [(k, v) for k, v in parsed.items()] if isinstance(parsed, dict) else []
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pairs = [(m.group(1), _plain(m.group(2).strip())) for m in _DICT_PAIR.finditer(text)]
    return {wanted[k]: (None if v is None else str(v)) for k, v in pairs if k in wanted}


def _plain(raw: str) -> str | None:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return None if raw in ("None", "") else raw
