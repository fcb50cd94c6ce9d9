"""Prometheus text for simulated engines, produced by prometheus_client under the engines' exact names.

Input is the simulated node's `EngineState`; a reading the state does not have (None) is simply not
exported, as a real engine exports nothing it has not measured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from gpumem_tui.demo.engine_state import EngineState

Flavour = Literal["vllm-v1", "vllm-v0", "sglang"]
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
ENGINE_INDEX = "0"
"""vLLM V1's `engine` label: the data-parallel engine index, 0 without data parallelism."""


def exposition(flavour: Flavour, engines: Sequence[EngineState]) -> bytes:
    """The /metrics body a real engine of this flavour would serve for these models."""
    registry = CollectorRegistry(auto_describe=False)
    BUILDERS[flavour](registry, engines)
    return generate_latest(registry)


def _set(gauge: Gauge, labels: Sequence[str], value: float | None) -> None:
    if value is not None:
        gauge.labels(*labels).set(value)


def _vllm_v1(registry: CollectorRegistry, engines: Sequence[EngineState]) -> None:
    """V1 (>= 0.9): labels model_name + engine; counters declared without `_total`."""
    labels = ["model_name", "engine"]
    gauge = {
        name: Gauge(f"vllm:{name}", name, labels, registry=registry)
        for name in ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc")
    }
    counter = {
        name: Counter(f"vllm:{name}", name, labels, registry=registry)
        for name in ("num_preemptions", "prefix_cache_queries", "prefix_cache_hits")
    }
    ttft = Histogram("vllm:time_to_first_token_seconds", "TTFT", labels, buckets=LATENCY_BUCKETS, registry=registry)
    info = Gauge("vllm:cache_config_info", "CacheConfig", [*_CACHE_LABELS, "engine"], registry=registry)
    for e in engines:
        key = (e.model, ENGINE_INDEX)
        _set(gauge["num_requests_running"], key, e.requests_running)
        _set(gauge["num_requests_waiting"], key, e.requests_waiting)
        _set(gauge["kv_cache_usage_perc"], key, e.kv_usage_fraction)
        counter["num_preemptions"].labels(*key).inc(e.preemptions_total or 0)
        counter["prefix_cache_queries"].labels(*key)
        counter["prefix_cache_hits"].labels(*key)
        ttft.labels(*key)
        info.labels(*_cache_values(e), ENGINE_INDEX).set(1)


def _vllm_v0(registry: CollectorRegistry, engines: Sequence[EngineState]) -> None:
    """v0: label model_name only, the old gauge name, a CPU cache and a swapped queue."""
    labels = ["model_name"]
    names = (
        "num_requests_running",
        "num_requests_waiting",
        "num_requests_swapped",
        "gpu_cache_usage_perc",
        "cpu_cache_usage_perc",
    )
    gauge = {name: Gauge(f"vllm:{name}", name, labels, registry=registry) for name in names}
    preemptions = Counter("vllm:num_preemptions_total", "preemptions", labels, registry=registry)
    info = Gauge("vllm:cache_config_info", "CacheConfig", _CACHE_LABELS, registry=registry)
    for e in engines:
        key = (e.model,)
        _set(gauge["num_requests_running"], key, e.requests_running)
        _set(gauge["num_requests_waiting"], key, e.requests_waiting)
        _set(gauge["num_requests_swapped"], key, 0)
        _set(gauge["gpu_cache_usage_perc"], key, e.kv_usage_fraction)
        _set(gauge["cpu_cache_usage_perc"], key, 0)
        preemptions.labels(*key).inc(e.preemptions_total or 0)
        info.labels(*_cache_values(e)).set(1)


def _sglang(registry: CollectorRegistry, engines: Sequence[EngineState]) -> None:
    """SGLang 0.5: label model_name; token usage counts evictable radix-cache tokens as free."""
    labels = ["model_name"]
    names = (
        "token_usage",
        "num_used_tokens",
        "num_running_reqs",
        "num_queue_reqs",
        "max_total_num_tokens",
        "context_len",
    )
    gauge = {name: Gauge(f"sglang:{name}", name, labels, registry=registry) for name in names}
    for e in engines:
        used = (
            None
            if e.kv_usage_fraction is None or e.kv_pool_tokens is None
            else round(e.kv_usage_fraction * e.kv_pool_tokens)
        )
        values = (e.kv_usage_fraction, used, e.requests_running, e.requests_waiting, e.kv_pool_tokens, e.max_model_len)
        for name, value in zip(names, values, strict=True):
            _set(gauge[name], (e.model,), value)


_CACHE_LABELS = [
    "block_size",
    "cache_dtype",
    "gpu_memory_utilization",
    "num_gpu_blocks",
    "num_cpu_blocks",
    "enable_prefix_caching",
]


def _cache_values(e: EngineState) -> list[str]:
    """CacheConfig fields as vLLM writes them: every value a string, `None` before the pool is carved."""
    return [str(e.block_size), e.cache_dtype, str(e.gpu_memory_utilization), str(e.num_gpu_blocks), "0", "True"]


BUILDERS: dict[str, Callable[[CollectorRegistry, Sequence[EngineState]], None]] = {
    "vllm-v1": _vllm_v1,
    "vllm-v0": _vllm_v0,
    "sglang": _sglang,
}
