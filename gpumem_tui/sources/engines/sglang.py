"""SGLang /metrics -> one EngineRecord per served model (token usage, pool size, queue, cache hit rate)."""

from __future__ import annotations

from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.engines.fleet_names import FleetNames
from gpumem_tui.sources.engines.prometheus import Families
from gpumem_tui.sources.engines.series import Key, SeriesReader, as_int, with_note

TOKEN_USAGE = "sglang:token_usage"  # (max_total - (available + evictable)) / max_total
POOL_TOKENS = "sglang:max_total_num_tokens"  # present in late 2024 and again from 0.5
RUNNING = "sglang:num_running_reqs"
WAITING = "sglang:num_queue_reqs"
HIT_RATE = "sglang:cache_hit_rate"
CONTEXT_LEN = "sglang:context_len"

NO_POOL = "this SGLang version does not export sglang:max_total_num_tokens (pool size unknown)"
FAMILIES = (TOKEN_USAGE, POOL_TOKENS, RUNNING, WAITING, HIT_RATE, CONTEXT_LEN)
FLEET = FleetNames(
    kv_usage=(TOKEN_USAGE,),
    running=(RUNNING,),
    waiting=(WAITING,),
    pools=(POOL_TOKENS,),
    pool_tokens=(POOL_TOKENS,),
)
"""What the fleet reads of SGLang's series through Prometheus (it exports no preemption counter: it retracts
requests, counted by a gauge of those retracted now)."""


def normalize(families: Families) -> list[EngineRecord]:
    """One record per `model_name` (or the older `name`) label; lowest tp_rank where ranks repeat."""
    reader = SeriesReader(families, ("model_name", "name", "tp_rank", "pp_rank"))
    records: dict[str | None, EngineRecord] = {}
    for key in reader.keys(FAMILIES, served=_model):
        model = _model(key)
        if model not in records:
            records[model] = _record(reader, key, model)
    return with_note(list(records.values()), reader.cap_note("SGLang models")) or [
        EngineRecord(engine="sglang", notes=["SGLang declares metrics but exports no samples yet"])
    ]


def _model(key: Key) -> str | None:
    return key[0] or key[1]


def _record(reader: SeriesReader, key: Key, model: str | None) -> EngineRecord:
    record = EngineRecord(
        engine="sglang",
        model=model,
        kv_usage_fraction=reader.value(TOKEN_USAGE, key),
        kv_pool_tokens=as_int(reader.value(POOL_TOKENS, key)),
        requests_running=as_int(reader.value(RUNNING, key)),
        requests_waiting=as_int(reader.value(WAITING, key)),
        prefix_cache_hit_rate=reader.value(HIT_RATE, key),
        max_model_len=as_int(reader.value(CONTEXT_LEN, key)),
    )
    notes = list(record.notes)  # what the record dropped as it arrived
    if not reader.present(POOL_TOKENS):
        notes.append(NO_POOL)
    return record.model_copy(update={"notes": notes})
