"""Frozen records of what an inference engine says about itself (from /metrics and /v1/models)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

from gpumem_tui.readings import dropped, unreadable

EngineKind = Literal["vllm", "sglang", "llamacpp", "tgi"]
EndpointState = Literal["ok", "stale", "down"]


class EngineRecord(BaseModel):
    """One served model on one engine endpoint. A reading the engine does not export is None, never 0."""

    model_config = ConfigDict(frozen=True)

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


class EndpointStatus(BaseModel):
    """How an engine endpoint answered the last scrape: ok, stale (last good sample and its age) or down."""

    model_config = ConfigDict(frozen=True)

    url: str
    state: EndpointState
    error: str | None = None
    age_s: float | None = None
    pids: list[int] = []
    records: list[EngineRecord] = []
    _dropped: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _readings_only(cls, data: object, handler):
        bad = unreadable(cls, data)
        status = handler({**data, **dict.fromkeys(bad)} if bad and isinstance(data, dict) else data)
        if bad:
            status._dropped = bad
        return status

    @property
    def dropped(self) -> dict[str, str]:
        """Readings that arrived as something no reading can be (the sample notes them): name -> why."""
        return self._dropped
