"""Prometheus text for simulated engines, produced by prometheus_client under the engines' exact names."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from gpumem_tui.sources.mock.engine_state import EngineState

Flavour = Literal["vllm-v1", "vllm-v0", "sglang"]
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)


def exposition(flavour: Flavour, engines: Sequence[EngineState]) -> bytes:
    """The /metrics body a real engine of this flavour would serve for these models."""
    registry = CollectorRegistry(auto_describe=False)
    BUILDERS[flavour](registry, engines)
    return generate_latest(registry)


def _vllm_v1(registry: CollectorRegistry, engines: Sequence[EngineState]) -> None:
    """V1 (>= 0.9): labels model_name + engine; counters declared without `_total`."""
    labels = ["model_name", "engine"]
    gauges = {
        name: Gauge(f"vllm:{name}", name, labels, registry=registry)
        for name in ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc")
    }
    counters = {
        name: Counter(f"vllm:{name}", name, labels, registry=registry)
        for name in ("num_preemptions", "prefix_cache_queries", "prefix_cache_hits")
    }
    ttft = Histogram(
        "vllm:time_to_first_token_seconds", "TTFT", labels, buckets=LATENCY_BUCKETS, registry=registry
    )
    info = Gauge(
        "vllm:cache_config_info",
        "Information of the LLMEngine CacheConfig",
        [*_CACHE_LABELS, "engine"],
        registry=registry,
    )
    for e in engines:
        key = (e.model, e.engine_index)
        gauges["num_requests_running"].labels(*key).set(e.requests_running)
        gauges["num_requests_waiting"].labels(*key).set(e.requests_waiting)
        gauges["kv_cache_usage_perc"].labels(*key).set(e.kv_usage_fraction)
        counters["num_preemptions"].labels(*key).inc(e.preemptions_total)
        counters["prefix_cache_queries"].labels(*key).inc(e.prefix_cache_queries)
        counters["prefix_cache_hits"].labels(*key).inc(e.prefix_cache_hits)
        ttft.labels(*key)
        info.labels(*_cache_values(e), e.engine_index).set(1)


def _vllm_v0(registry: CollectorRegistry, engines: Sequence[EngineState]) -> None:
    """v0: label model_name only, the old gauge names, a CPU cache and a swapped queue."""
    labels = ["model_name"]
    names = (
        "num_requests_running",
        "num_requests_waiting",
        "num_requests_swapped",
        "gpu_cache_usage_perc",
        "cpu_cache_usage_perc",
        "gpu_prefix_cache_hit_rate",
    )
    gauges = {name: Gauge(f"vllm:{name}", name, labels, registry=registry) for name in names}
    preemptions = Counter("vllm:num_preemptions_total", "preemptions", labels, registry=registry)
    info = Gauge(
        "vllm:cache_config_info", "Information of the LLMEngine CacheConfig", _CACHE_LABELS, registry=registry
    )
    for e in engines:
        gauges["num_requests_running"].labels(e.model).set(e.requests_running)
        gauges["num_requests_waiting"].labels(e.model).set(e.requests_waiting)
        gauges["num_requests_swapped"].labels(e.model).set(0)
        gauges["gpu_cache_usage_perc"].labels(e.model).set(e.kv_usage_fraction)
        gauges["cpu_cache_usage_perc"].labels(e.model).set(0)
        gauges["gpu_prefix_cache_hit_rate"].labels(e.model).set(_hit_rate(e))
        preemptions.labels(e.model).inc(e.preemptions_total)
        info.labels(*_cache_values(e)).set(1)


def _sglang(registry: CollectorRegistry, engines: Sequence[EngineState]) -> None:
    """SGLang 0.5: label model_name; token usage counts evictable radix-cache tokens as free."""
    labels = ["model_name"]
    names = (
        "token_usage",
        "num_used_tokens",
        "num_running_reqs",
        "num_queue_reqs",
        "cache_hit_rate",
        "max_total_num_tokens",
        "context_len",
    )
    gauges = {name: Gauge(f"sglang:{name}", name, labels, registry=registry) for name in names}
    for e in engines:
        values = (
            e.kv_usage_fraction,
            round(e.kv_usage_fraction * e.pool_tokens),
            e.requests_running,
            e.requests_waiting,
            _hit_rate(e),
            e.pool_tokens,
            e.max_model_len,
        )
        for name, value in zip(names, values, strict=True):
            gauges[name].labels(e.model).set(value)


_CACHE_LABELS = [
    "block_size",
    "cache_dtype",
    "gpu_memory_utilization",
    "num_gpu_blocks",
    "num_cpu_blocks",
    "enable_prefix_caching",
]


def _cache_values(e: EngineState) -> list[str]:
    return [
        str(e.block_size),
        e.cache_dtype,
        str(e.gpu_memory_utilization),
        str(e.num_gpu_blocks),
        "0",
        "True",
    ]


def _hit_rate(e: EngineState) -> float:
    return e.prefix_cache_hits / e.prefix_cache_queries if e.prefix_cache_queries else 0.0


BUILDERS: dict[str, Callable[[CollectorRegistry, Sequence[EngineState]], None]] = {
    "vllm-v1": _vllm_v1,
    "vllm-v0": _vllm_v0,
    "sglang": _sglang,
}
