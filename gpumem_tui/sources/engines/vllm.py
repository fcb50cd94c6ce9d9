"""vLLM /metrics (v0 and V1, old and new names) -> one EngineRecord per served model and engine index."""

from __future__ import annotations

from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.engines.fleet_names import FleetNames
from gpumem_tui.sources.engines.prometheus import Families, Series
from gpumem_tui.sources.engines.series import Key, SeriesReader, as_int, label_float, label_int, with_note

KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")  # renamed in 0.9, old name gone in 0.12
CPU_USAGE = "vllm:cpu_cache_usage_perc"  # v0 only
RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
SWAPPED = "vllm:num_requests_swapped"  # v0 only
PREEMPTIONS = "vllm:num_preemptions_total"
HITS = ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")  # V1 counters, renamed in 0.9
QUERIES = ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")
HIT_RATE_V0 = "vllm:gpu_prefix_cache_hit_rate"
CACHE_INFO = "vllm:cache_config_info"
SLEEP_STATE = "vllm:engine_sleep_state"  # its sleep mode: weights or KV cache freed on purpose

PER_MODEL = (*KV_USAGE, CPU_USAGE, RUNNING, WAITING, SWAPPED, PREEMPTIONS, *HITS, *QUERIES, HIT_RATE_V0)
FAMILIES = (*PER_MODEL, CACHE_INFO)
FLEET = FleetNames(
    kv_usage=KV_USAGE,
    running=(RUNNING,),
    waiting=(WAITING,),
    preemptions=(PREEMPTIONS,),
    pools=(CACHE_INFO,),
    sleeping=(SLEEP_STATE,),
    swapped=(SWAPPED,),
)
"""What the fleet reads of vLLM's series through Prometheus."""


def normalize(families: Families) -> list[EngineRecord]:
    """A record per (model_name, engine) label pair; one empty record if vLLM declares metrics only."""
    reader = SeriesReader(families, ("model_name", "engine"))
    family = _version_family(families)
    keys = reader.keys(PER_MODEL) or [(None, None)]
    cache_by_engine = _cache_by_engine(families.get(CACHE_INFO))
    records = [_record(reader, key, family, cache_by_engine) for key in keys]
    records = with_note(records, reader.cap_note("vLLM models"))
    if keys == [(None, None)] and not families.get(CACHE_INFO):
        records = [
            r.model_copy(update={"notes": [*r.notes, "vLLM declares its metrics but exports no samples yet"]})
            for r in records
        ]
    return records


def _record(reader: SeriesReader, key: Key, family: str | None, cache_by_engine: dict) -> EngineRecord:
    model, engine = key
    cache = _cache_info(cache_by_engine, engine)
    usage = reader.first(KV_USAGE, key)
    record = EngineRecord(
        engine="vllm",
        version_family=family,
        model=model,
        engine_index=engine,
        kv_usage_fraction=usage,
        requests_running=as_int(reader.value(RUNNING, key)),
        requests_waiting=as_int(reader.value(WAITING, key)),
        preemptions_total=reader.value(PREEMPTIONS, key),
        prefix_cache_hit_rate=_hit_rate(reader, key),
        cpu_cache_usage_fraction=reader.value(CPU_USAGE, key),
        **cache,
        notes=[],
    )
    if usage is not None or any(reader.present(n) for n in KV_USAGE):
        return record
    notes = [*record.notes, "no KV-cache usage gauge (vllm:kv_cache_usage_perc) in this payload"]
    return record.model_copy(update={"notes": notes})


def _hit_rate(reader: SeriesReader, key: Key) -> float | None:
    """V1: lifetime hits / queries from the counters; v0: the engine's own gauge."""
    hits, queries = reader.first(HITS, key), reader.first(QUERIES, key)
    if hits is not None and queries:
        return hits / queries
    return reader.value(HIT_RATE_V0, key)


def _cache_by_engine(samples: list[Series]) -> dict:
    """`vllm:cache_config_info` labels by engine label (the first series wins); a lone series also under
    the key `None`, for records whose engine it does not name."""
    out: dict = {}
    for sample in samples:
        out.setdefault(sample.labels.get("engine"), sample.labels)
    if len(samples) == 1:
        out[_ANY] = samples[0].labels
    return out


_ANY = object()


def _cache_info(cache_by_engine: dict, engine: str | None) -> dict:
    """Pool size, block size, cache dtype and memory setting from `vllm:cache_config_info` labels."""
    labels = cache_by_engine.get(engine)
    labels = cache_by_engine.get(_ANY) if labels is None else labels
    if labels is None:
        return {}
    blocks, block_size = label_int(labels, "num_gpu_blocks"), label_int(labels, "block_size")
    pool = label_int(labels, "kv_cache_size_tokens")
    if pool is None and blocks is not None and block_size is not None:
        pool = blocks * block_size
    dtype = labels.get("cache_dtype")
    return {
        "kv_pool_tokens": pool,
        "block_size": block_size,
        "num_gpu_blocks": blocks,
        "cache_dtype": dtype if dtype not in (None, "", "None") else None,
        "gpu_memory_utilization": label_float(labels, "gpu_memory_utilization"),
    }


def _version_family(families: Families) -> str | None:
    """`v1` (engine label, new gauge name, prefix counters) or `v0` (CPU cache, swapped queue), else None."""
    has = families.present.__contains__
    v1_labels = any("engine" in s.labels for name in PER_MODEL for s in families.get(name))
    if v1_labels or has(KV_USAGE[0]) or any(has(n) for n in (*HITS, *QUERIES)):
        return "v1"
    if has(CPU_USAGE) or has(SWAPPED) or has(HIT_RATE_V0):
        return "v0"
    return None
