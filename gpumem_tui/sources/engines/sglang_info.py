"""SGLang's `/get_server_info` and `/get_model_info` answers -> `SglangSettings`: the server's own arguments,
the pool it carved and its model, each value kept only where it is of its field's kind (a note says which
was not). Shapes as SGLang 0.5.6's http_server.py returns them: the server args with the scheduler's
`max_total_num_tokens` beside them, `internal_states` (one per DP rank, with `memory_usage` in GiB)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from gpumem_tui.engine_records import EngineRecord, SglangSettings
from gpumem_tui.sources.engines.sglang import NO_POOL
from gpumem_tui.units import GIB

SERVER_INFO = "/get_server_info"
MODEL_INFO = "/get_model_info"
PATHS = (SERVER_INFO, MODEL_INFO)
MAX_BYTES = 2**20
"""The largest answer read: SGLang's server info is a few tens of KiB (its arguments, once per DP rank)."""
MAX_TEXT = 1024
"""The longest text setting kept (a model path); a longer one is missing, and said."""

_INTS: tuple[str, ...] = ("tp_size", "dp_size", "pp_size", "max_total_tokens", "max_running_requests")
_INTS += ("chunked_prefill_size", "cuda_graph_max_bs", "page_size", "context_length", "max_total_num_tokens")
_INTS += ("max_req_input_len",)
_TEXTS: tuple[str, ...] = ("model_path", "served_model_name", "version", "kv_cache_dtype", "dtype", "quantization")
_TEXTS += ("speculative_algorithm",)
_FLAGS = ("enable_dp_attention", "disable_cuda_graph")
_MODEL_FLAGS = ("is_generation", "has_image_understanding")
_MEMORY = {"weight": "weights_bytes", "kvcache": "kv_cache_bytes", "graph": "cuda_graph_bytes"}
_POSITIVE = {"tp_size", "dp_size", "pp_size", "page_size", "cuda_graph_max_bs", "context_length"}


def read_info(answers: Mapping[str, str | None]) -> SglangSettings:
    """The settings from each path's answer text (None: it gave none; its reason is in `answers[path + "!"]`)."""
    notes: list[str] = []
    values: dict[str, Any] = {}
    server = _object(answers, SERVER_INFO, notes)
    if server is not None:
        values.update(_server(server, notes))
    model = _object(answers, MODEL_INFO, notes)
    if model is not None:
        values.update(_kept(model, _MODEL_FLAGS, _flag, MODEL_INFO, notes))
        if "model_path" not in values:
            values.update(_kept(model, ("model_path",), _text, MODEL_INFO, notes))
    return SglangSettings(**values, notes=notes)


def with_info(records: list[EngineRecord], settings: SglangSettings) -> list[EngineRecord]:
    """The records carrying the server's settings; a pool its metrics do not state (an SGLang release without
    `sglang:max_total_num_tokens`) taken from the scheduler's answer, and said."""
    out = []
    for record in records:
        update: dict[str, Any] = {"sglang": settings}
        if record.kv_pool_tokens is None and settings.max_total_num_tokens is not None:
            update["kv_pool_tokens"] = settings.max_total_num_tokens
            notes = [n for n in record.notes if n != NO_POOL]
            update["notes"] = [*notes, f"KV pool size from {SERVER_INFO} (max_total_num_tokens)"]
        out.append(record.model_copy(update=update))
    return out


def _object(answers: Mapping[str, str | None], path: str, notes: list[str]) -> dict | None:
    """The answer as a JSON object, or None with the reason in `notes`."""
    text = answers.get(path)
    if text is None:
        notes.append(f"{path}: {answers.get(path + '!') or 'no answer'}")
        return None
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        notes.append(f"{path}: not JSON; the settings it holds are unknown")
        return None
    if not isinstance(body, dict):
        notes.append(f"{path}: a JSON {type(body).__name__}, not an object; the settings it holds are unknown")
        return None
    return body


def _server(body: dict, notes: list[str]) -> dict[str, Any]:
    values = {
        **_kept(body, _INTS, _int, SERVER_INFO, notes),
        **_kept(body, _TEXTS, _text, SERVER_INFO, notes),
        **_kept(body, _FLAGS, _flag, SERVER_INFO, notes),
        **_kept(body, ("mem_fraction_static",), _fraction, SERVER_INFO, notes),
    }
    states = body.get("internal_states")
    first = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
    memory = first.get("memory_usage")
    if isinstance(memory, dict):
        for key, field in _MEMORY.items():
            gib = _kept(memory, (key,), _gib_count, f"{SERVER_INFO} memory_usage", notes).get(key)
            if gib is not None:
                values[field] = round(gib * GIB)
    return values


def _kept(body: Mapping, keys: tuple[str, ...], kind: Any, where: str, notes: list[str]) -> dict[str, Any]:
    """Each of `keys` the body holds as a value of its kind (None stays None: the server's unset)."""
    out: dict[str, Any] = {}
    for key in keys:
        if key not in body or body[key] is None:
            continue
        value, why = kind(body[key], key)
        if why is None:
            out[key] = value
        else:
            notes.append(f"{where}: {key} is {_shown(body[key])}, {why}; shown as missing")
    return out


def _int(value: Any, key: str) -> tuple[Any, str | None]:
    if isinstance(value, bool) or not isinstance(value, int):
        return None, "not a whole number"
    if abs(value) >= 2**63 or (key in _POSITIVE and value < 1) or value < -1:
        return None, "out of range"
    return value, None


def _fraction(value: Any, _key: str) -> tuple[Any, str | None]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, "not a number"
    if not (math.isfinite(value) and 0 < value <= 1):
        return None, "not a fraction in (0, 1]"
    return float(value), None


def _gib_count(value: Any, _key: str) -> tuple[Any, str | None]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, "not a number"
    if not (math.isfinite(value) and 0 <= value < 2**30):
        return None, "out of range"
    return float(value), None


def _flag(value: Any, _key: str) -> tuple[Any, str | None]:
    return (value, None) if isinstance(value, bool) else (None, "not true or false")


def _text(value: Any, _key: str) -> tuple[Any, str | None]:
    if not isinstance(value, str):
        return None, "not text"
    if len(value) > MAX_TEXT:
        return None, f"over {MAX_TEXT} characters"
    return value, None


def _shown(value: Any) -> str:
    """A value as the server sent it, cut short (the note is shown literally, never parsed)."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."
