"""Whether what an engine reports could be true: a utilization is a fraction of the GPU, a max length and a
block size are positive and within what any model holds, a KV cache dtype is one the planner sizes, a usage
is a fraction, a count is not negative. An implausible value is never planned with (`autoplan` leaves that
fact unknown) nor judged as a measurement; the finding `engine_value_implausible` names it instead."""

from __future__ import annotations

import math
from typing import NamedTuple

from gpumem_tui.catalog.schema import MAX_CONTEXT
from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.planner.dtypes import KV_DTYPE_BYTES

MAX_BLOCK_SIZE = 65_536
"""Tokens per KV block: vLLM uses 16 to a few hundred (hybrid models a few thousand)."""
MAX_COUNT = 10**15
"""No engine has a quadrillion blocks, tokens, requests or preemptions."""

LABELS = {
    "gpu_memory_utilization": "utilization",
    "max_model_len": "max length",
    "block_size": "block size",
    "cache_dtype": "KV cache dtype",
    "kv_usage_fraction": "KV cache usage",
    "cpu_cache_usage_fraction": "CPU cache usage",
    "prefix_cache_hit_rate": "prefix cache hit rate",
    "kv_pool_tokens": "KV pool",
    "num_gpu_blocks": "GPU blocks",
    "requests_running": "running requests",
    "requests_waiting": "waiting requests",
    "preemptions_total": "preemptions",
    "preemptions_per_min": "preemptions per minute",
}
"""Every record field judged, in the words a finding uses."""


class Implausible(NamedTuple):
    field: str
    value: object
    why: str

    def __str__(self) -> str:
        if self.value is None:  # dropped as the record arrived: only why is known
            return f"the engine's {LABELS[self.field]} is {self.why}: not a reading"
        return f"the engine reports {LABELS[self.field]} {shown(self.value)}: {self.why}"


def why_implausible(field: str, value: object) -> str | None:
    """Why an engine's value for `field` cannot be true, or None when it can (or is not reported)."""
    if value is None:
        return None
    if field == "cache_dtype":
        return None if str(value).lower() in KV_DTYPE_BYTES else "not a KV cache dtype the planner knows"
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return "not a number"
    if field == "gpu_memory_utilization":
        return None if 0 < value <= 1 else "not a fraction of the GPU"
    if field in ("kv_usage_fraction", "cpu_cache_usage_fraction", "prefix_cache_hit_rate"):
        return None if 0 <= value <= 1 else "not a fraction"
    if field == "max_model_len":
        return None if 0 < value <= MAX_CONTEXT else f"not a length from 1 to {MAX_CONTEXT:,} tokens"
    if field == "block_size":
        return None if 0 < value <= MAX_BLOCK_SIZE else f"not a block size from 1 to {MAX_BLOCK_SIZE:,} tokens"
    if value < 0:
        return "not a count"
    return None if value <= MAX_COUNT else f"beyond any engine's count (over {MAX_COUNT:,})"


RECORDS_KEPT = 64
"""Records whose judgement `_judged` keeps: a sample's, asked about by a dozen rules in each unit."""
_JUDGED: dict[int, tuple[EngineRecord, list[Implausible], EngineRecord]] = {}


def implausible(record: EngineRecord | None) -> list[Implausible]:
    """Every value in the record that cannot be true, in field order: those it holds, and those it dropped
    as it arrived (NaN, infinite, negative: `EngineRecord.dropped`)."""
    return [] if record is None else list(_judged(record)[1])


def plausible(record: EngineRecord) -> EngineRecord:
    """The record with every implausible value taken out (None: not reported), for judging what it measures."""
    return _judged(record)[2]


def _judged(record: EngineRecord) -> tuple[EngineRecord, list[Implausible], EngineRecord]:
    """(the record, what of it cannot be true, the record without it), judged once per record: a record is
    frozen, so what it holds is judged alike however many rules ask. Kept by identity, the record with it, so
    no other record can take its id while it is kept; at most RECORDS_KEPT are kept."""
    kept = _JUDGED.get(id(record))
    if kept is not None and kept[0] is record:
        return kept
    found = []
    for field in LABELS:
        value = getattr(record, field)
        why = why_implausible(field, value)
        if why:
            found.append(Implausible(field, value, why))
        elif field in record.dropped:
            found.append(Implausible(field, None, record.dropped[field]))
    without = record.model_copy(update={v.field: None for v in found}) if found else record
    if len(_JUDGED) >= RECORDS_KEPT:
        _JUDGED.clear()
    kept = _JUDGED[id(record)] = (record, found, without)
    return kept


def shown(value: object) -> str:
    """A reported value as the finding quotes it: numbers as written, text quoted and cut short."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if abs(value) < 10**30 else "a number of over 30 digits"
    text = str(value)
    return repr(text if len(text) <= 40 else text[:40] + "...")


def questioned(record: EngineRecord) -> list[str]:
    """`cannot be true: the engine reports utilization 50: not a fraction of the GPU` for each value the
    record holds that cannot be true, as text output prints it under the record (what the record dropped
    as it arrived is in its notes already)."""
    return [f"cannot be true: {value}" for value in implausible(record) if value.value is not None]
