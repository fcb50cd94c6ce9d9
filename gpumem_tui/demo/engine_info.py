"""What a simulated SGLang server answers at `/get_server_info` and `/get_model_info`, in SGLang 0.5.6's shapes
(http_server.py): every ServerArgs field (`sglang_server_args.json`: the release's defaults, as resolved at start
where the engine says), the scheduler's `max_total_num_tokens` and `max_req_input_len` beside them, one
`internal_states` entry per DP rank with its `memory_usage` in GiB (rounded to 2 places, as SGLang rounds), and
the release."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from gpumem_tui.demo.engine_exposition import Flavour
from gpumem_tui.demo.engine_state import EngineState
from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.engines.registry import registered
from gpumem_tui.units import GIB

ARGS = Path(__file__).with_name("sglang_server_args.json")
PATHS = ("/get_server_info", "/get_model_info")


@cache
def _defaults() -> dict[str, Any]:
    return json.loads(ARGS.read_text(encoding="utf-8"))["args"]


def server_info(e: EngineState) -> dict[str, Any]:
    """`/get_server_info` of an engine that serves: the release's defaults, but for the server arguments its
    `sglang` settings state as resolved at start (sglang_engine.py's `_settings`)."""
    said = e.sglang or {}
    args = {**_defaults(), **{k: v for k, v in said.items() if k in _defaults()}}
    args.update(model_path=e.model, served_model_name=e.model, port=e.port, enable_metrics=True)
    args.update(dtype="bfloat16" if e.format == "bf16" else "auto", quantization=_quantization(e.format))
    memory = {
        "weight": round(said.get("weights_bytes", 0) / GIB, 2),
        "kvcache": round(said.get("kv_cache_bytes", 0) / GIB, 2),
        "token_capacity": said.get("max_total_num_tokens"),
        "graph": round(said.get("cuda_graph_bytes", 0) / GIB, 2),
    }
    state = {**args, "last_gen_throughput": 0.0, "memory_usage": memory}
    scheduler = {
        "status": "ready",
        "max_total_num_tokens": said.get("max_total_num_tokens"),
        "max_req_input_len": (said.get("context_length") or e.max_model_len) - 1,
    }
    return {**args, **scheduler, "internal_states": [state], "version": said.get("version", "0.5.6")}


def model_info(e: EngineState) -> dict[str, Any]:
    """`/get_model_info`."""
    return {
        "model_path": e.model,
        "tokenizer_path": e.model,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": "default",
        "has_image_understanding": False,
        "has_audio_understanding": False,
    }


def flavour(e: EngineState) -> Flavour:
    """The /metrics an engine of this state's kind serves (vLLM: V1's)."""
    return "sglang" if e.engine == "sglang" else "vllm-v1"


def answer(path: str, e: EngineState) -> str | None:
    """The engine's answer at one of its settings paths, or None where it has none (not SGLang)."""
    if e.engine != "sglang" or path not in PATHS:
        return None
    return json.dumps(server_info(e) if path == PATHS[0] else model_info(e))


def with_answers(records: list[EngineRecord], e: EngineState) -> list[EngineRecord]:
    """Records parsed from the engine's /metrics carrying what its settings paths answer, as the scraper
    carries them (the registry's `read_info` and `with_info`)."""
    entry = registered(e.engine)
    if entry is None or entry.read_info is None or entry.with_info is None or not records:
        return records
    return entry.with_info(records, entry.read_info({path: answer(path, e) for path in entry.info}))


def _quantization(fmt: str) -> str | None:
    return None if fmt in ("bf16", "fp16") else fmt
