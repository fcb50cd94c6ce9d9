"""Frozen records of what an inference engine says about itself (from /metrics and /v1/models)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    SerializerFunctionWrapHandler,
    StringConstraints,
    field_validator,
    model_serializer,
    model_validator,
)

from gpumem_tui.readings import ReadingsRecord, dropped, reading_fields, unreadable
from gpumem_tui.records import Record

EngineKind = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
"""A kind in `sources/engines/registry.py` (`vllm`, `sglang`, ...). Records sit below the sources, so the kind is
checked as a short name here; a kind the registry lacks (a recording from a newer release) is shown and not sized."""
EndpointState = Literal["ok", "stale", "down"]


class SglangSettings(Record):
    """What a running SGLang server says of itself: its server arguments (`/get_server_info`, as resolved at
    start, defaults filled in), the pool it carved (`max_total_num_tokens`, the memory it logged per part) and
    its model (`/get_model_info`). A value the server sent that is not of its field's kind is missing, and said
    in `notes`. What SGLang's own sizing needs to plan this engine again (sources/engines/sglang_info.py)."""

    model_path: str | None = None
    served_model_name: str | None = None
    version: str | None = None
    """SGLang's release (`0.5.6`)."""
    tp_size: int | None = None
    dp_size: int | None = None
    pp_size: int | None = None
    enable_dp_attention: bool | None = None
    mem_fraction_static: float | None = None
    max_total_tokens: int | None = None
    """`--max-total-tokens`: the pool's cap set by hand (None: the profiled size)."""
    max_running_requests: int | None = None
    chunked_prefill_size: int | None = None
    """-1: chunked prefill off."""
    cuda_graph_max_bs: int | None = None
    disable_cuda_graph: bool | None = None
    page_size: int | None = None
    context_length: int | None = None
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    quantization: str | None = None
    speculative_algorithm: str | None = None
    max_total_num_tokens: int | None = None
    """The KV pool it carved, in tokens (the scheduler's answer at start)."""
    max_req_input_len: int | None = None
    weights_bytes: int | None = None
    """Its `memory_usage` per part, logged in GiB (SGLang writes "GB" and means 2**30 bytes), held in bytes."""
    kv_cache_bytes: int | None = None
    cuda_graph_bytes: int | None = None
    is_generation: bool | None = None
    has_image_understanding: bool | None = None
    notes: list[str] = []
    """Why a setting is missing: an answer that was not JSON, too large, or a value of the wrong kind."""


class EngineRecord(Record):
    """One served model on one engine endpoint. A reading the engine does not export is None, never 0."""

    endpoint: str | None = None
    engine: EngineKind
    version_family: str | None = None
    """vLLM `v0` or `v1`; None for engines with one metric family."""
    model: str | None = None
    engine_index: str | None = None
    """vLLM's `engine` label (the data-parallel engine index); None where the payload has no such label."""
    kv_usage_fraction: float | None = None
    kv_pool_tokens: int | None = None
    block_size: int | None = None
    num_gpu_blocks: int | None = None
    cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    requests_running: int | None = None
    requests_waiting: int | None = None
    preemptions_total: float | None = None
    preemptions_per_min: float | None = None
    prefix_cache_hit_rate: float | None = None
    cpu_cache_usage_fraction: float | None = None
    max_model_len: int | None = None
    notes: list[str] = []
    """Plain-language remarks about the payload (a metric this engine version no longer exports, a
    reading that was not a number and is shown as missing)."""
    dropped: dict[str, str] = {}
    """Readings the engine sent that no reading can be (NaN, infinite, negative), kept as missing: field ->
    why. Recorded with the record, so a replay names them as the live view did (`engine_value_implausible`)."""
    sglang: SglangSettings | None = None
    """An SGLang server's own settings, where it answered `/get_server_info`; left out of JSON where None."""

    @model_serializer(mode="wrap")
    def _settings_where_read(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        data = handler(self)
        if self.sglang is None:
            data.pop("sglang", None)
        return data

    @field_validator("dropped")
    @classmethod
    def _readings_named(cls, value: dict[str, str]) -> dict[str, str]:
        """A recording brings `dropped` back: only reading fields, each reason cut to a few words (a finding
        quotes it)."""
        readings = reading_fields(cls)
        return {name: why if len(why) <= 60 else why[:57] + "..." for name, why in value.items() if name in readings}

    @model_validator(mode="before")
    @classmethod
    def _readings_only(cls, data: object) -> object:
        """A number that cannot be a reading (NaN, infinite, negative) is missing, with a note saying so."""
        bad = unreadable(cls, data)
        if not bad or not isinstance(data, dict):  # only a mapping has readings to drop
            return data
        notes = data.get("notes", [])
        said = [*notes, dropped(bad)] if isinstance(notes, list) else notes  # not a list: validation says so
        before = data.get("dropped", {})
        known = {**before, **bad} if isinstance(before, dict) else before  # not a table: validation says so
        return {**data, **dict.fromkeys(bad), "notes": said, "dropped": known}


class EndpointStatus(ReadingsRecord):
    """How an engine endpoint answered the last scrape: ok, stale (last good sample and its age) or down."""

    url: str
    state: EndpointState
    error: str | None = None
    age_s: float | None = None
    pids: list[int] = []
    devices: list[str] = []
    """The GPUs the engine's environment names (`GPU-...`/`MIG-...` UUIDs or indices), when discovery read it
    (empty: not read, or every GPU): what places the engine on its GPUs when NVML's pids are not the ones seen
    here (a container)."""
    records: list[EngineRecord] = []
