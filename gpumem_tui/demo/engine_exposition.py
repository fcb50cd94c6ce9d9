"""Prometheus text for simulated engines, as prometheus_client writes it under the engines' exact names.

Input is the simulated node's `EngineState`; a reading the state does not have (None) is simply not
exported, as a real engine exports nothing it has not measured. A body is prometheus_client's text for its
shape (which series exist, under which labels), written once as a template, with this scrape's values
formatted into their places as prometheus_client formats them: building a registry each scrape cost ten
times more (docs/design/node.md). `registry` builds the registry itself, the templates' reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.utils import floatToGoString

from gpumem_tui.demo.engine_state import EngineState

Flavour = Literal["vllm-v1", "vllm-v0", "sglang"]
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
ENGINE_INDEX = "0"
"""vLLM V1's `engine` label: the data-parallel engine index, 0 without data parallelism."""


@dataclass(frozen=True)
class Family:
    """One metric family as the engine declares it."""

    kind: Literal["gauge", "counter", "histogram"]
    name: str
    documentation: str
    labels: tuple[str, ...]


Point = tuple[Family, tuple[str, ...], float | None]
"""One series: its family, its label values and its value; None: the series exists untouched (a counter at
zero, an empty histogram)."""


def exposition(flavour: Flavour, engines: Sequence[EngineState]) -> bytes:
    """The /metrics body a real engine of this flavour would serve for these models."""
    points = _merged(POINTS[flavour](engines))
    shape = tuple((family, labels, value is None) for family, labels, value in points)
    template, order = _template(flavour, shape)
    values = [value for _, _, value in points]
    return (template % tuple(floatToGoString(values[k]) for k in order)).encode()


def registry(flavour: Flavour, engines: Sequence[EngineState]) -> CollectorRegistry:
    """The prometheus_client registry a real engine of this flavour would hold for these models, every point
    set as it comes (the registry keeps one series per label set)."""
    return _registry(flavour, POINTS[flavour](engines))


def _registry(flavour: Flavour, points: Sequence[Point]) -> CollectorRegistry:
    """Every family of the flavour declared, in its order, and each point's series created and set."""
    out = CollectorRegistry(auto_describe=False)
    metrics = {family: _metric(family, out) for family in FAMILIES[flavour]}
    for family, labels, value in points:
        series = metrics[family].labels(*labels)
        if value is None:
            continue
        if family.kind == "counter":
            series.inc(value)  # type: ignore[union-attr]
        else:
            series.set(value)  # type: ignore[union-attr]
    return out


def _metric(family: Family, out: CollectorRegistry) -> Gauge | Counter | Histogram:
    labels = list(family.labels)
    if family.kind == "histogram":
        return Histogram(family.name, family.documentation, labels, buckets=LATENCY_BUCKETS, registry=out)
    kind = Counter if family.kind == "counter" else Gauge
    return kind(family.name, family.documentation, labels, registry=out)


def _merged(points: list[Point]) -> list[Point]:
    """One point per series, as the registry keeps one: a gauge set twice holds the last value, a counter
    increased twice the sum."""
    merged: dict[tuple[Family, tuple[str, ...]], float | None] = {}
    for family, labels, value in points:
        key = (family, labels)
        before = merged.get(key)
        if family.kind == "counter" and before is not None and value is not None:
            value += before
        merged[key] = value if value is not None or key not in merged else before
    return [(family, labels, value) for (family, labels), value in merged.items()]


SENTINEL = 7_000_000_000
"""Point k is set to SENTINEL + k while its template is written: a value no engine reports, so its text
(`7.000000001e+09`) marks where point k's value goes."""


@lru_cache(maxsize=256)
def _template(flavour: Flavour, shape: tuple[tuple[Family, tuple[str, ...], bool], ...]) -> tuple[str, list[int]]:
    """prometheus_client's text for this shape as a `%` template, and which point's value fills each `%s`."""
    marked = [
        (family, labels, None if untouched else SENTINEL + k) for k, (family, labels, untouched) in enumerate(shape)
    ]
    marks = {floatToGoString(value): k for k, (_, _, value) in enumerate(marked) if value is not None}
    lines, order = [], []
    for line in generate_latest(_registry(flavour, marked)).decode().replace("%", "%%").split("\n"):
        head, _, tail = line.rpartition(" ")
        if not line.startswith("#") and tail in marks:
            order.append(marks[tail])
            line = head + " %s"
        lines.append(line)
    return "\n".join(lines), order


def _vllm_v1(engines: Sequence[EngineState]) -> list[Point]:
    """V1 (>= 0.9): labels model_name + engine; counters declared without `_total`."""
    points: list[Point] = []
    for e in engines:
        key = (e.model, ENGINE_INDEX)
        points += _set(key, (V1_RUNNING, e.requests_running), (V1_WAITING, e.requests_waiting))
        points += _set(key, (V1_KV, e.kv_usage_fraction))
        points += [
            (V1_PREEMPTIONS, key, e.preemptions_total or 0),
            (V1_QUERIES, key, None),
            (V1_HITS, key, None),
            (V1_TTFT, key, None),
            (V1_CACHE, (*_cache_values(e), ENGINE_INDEX), 1),
        ]
    return points


def _vllm_v0(engines: Sequence[EngineState]) -> list[Point]:
    """v0: label model_name only, the old gauge name, a CPU cache and a swapped queue."""
    points: list[Point] = []
    for e in engines:
        key = (e.model,)
        points += _set(key, (V0_RUNNING, e.requests_running), (V0_WAITING, e.requests_waiting), (V0_SWAPPED, 0))
        points += _set(key, (V0_GPU_KV, e.kv_usage_fraction), (V0_CPU_KV, 0))
        points += [(V0_PREEMPTIONS, key, e.preemptions_total or 0), (V0_CACHE, tuple(_cache_values(e)), 1)]
    return points


def _sglang(engines: Sequence[EngineState]) -> list[Point]:
    """SGLang 0.5.6: each scheduler (one per TP rank) exports its own series, labelled model_name, engine_type,
    tp_rank and pp_rank (scheduler_metrics_mixin.py); token usage counts evictable radix-cache tokens as free."""
    points: list[Point] = []
    for e in engines:
        used = (
            None
            if e.kv_usage_fraction is None or e.kv_pool_tokens is None
            else round(e.kv_usage_fraction * e.kv_pool_tokens)
        )
        values = (e.requests_running, used, e.kv_usage_fraction, e.requests_waiting, 0.0, e.kv_pool_tokens)
        for rank in range(e.tensor_parallel_size):
            points += _set((e.model, "unified", str(rank), "0"), *zip(SGLANG, values, strict=True))
    return points


def _set(labels: tuple[str, ...], *readings: tuple[Family, float | None]) -> list[Point]:
    """A gauge's series for each reading the state has: none for a reading it lacks."""
    return [(family, labels, value) for family, value in readings if value is not None]


_CACHE_LABELS = (
    "block_size",
    "cache_dtype",
    "gpu_memory_utilization",
    "num_gpu_blocks",
    "num_cpu_blocks",
    "enable_prefix_caching",
)


def _cache_values(e: EngineState) -> list[str]:
    """CacheConfig fields as vLLM writes them: every value a string, `None` before the pool is carved."""
    return [str(e.block_size), e.cache_dtype, str(e.gpu_memory_utilization), str(e.num_gpu_blocks), "0", "True"]


def _gauges(prefix: str, names: Sequence[str], labels: tuple[str, ...]) -> list[Family]:
    return [Family("gauge", f"{prefix}{name}", name, labels) for name in names]


_V1 = ("model_name", "engine")
V1_RUNNING, V1_WAITING, V1_KV = _gauges(
    "vllm:", ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc"), _V1
)
V1_PREEMPTIONS, V1_QUERIES, V1_HITS = (
    Family("counter", f"vllm:{name}", name, _V1)
    for name in ("num_preemptions", "prefix_cache_queries", "prefix_cache_hits")
)
V1_TTFT = Family("histogram", "vllm:time_to_first_token_seconds", "TTFT", _V1)
V1_CACHE = Family("gauge", "vllm:cache_config_info", "CacheConfig", (*_CACHE_LABELS, "engine"))
V0_RUNNING, V0_WAITING, V0_SWAPPED, V0_GPU_KV, V0_CPU_KV = _gauges(
    "vllm:",
    (
        "num_requests_running",
        "num_requests_waiting",
        "num_requests_swapped",
        "gpu_cache_usage_perc",
        "cpu_cache_usage_perc",
    ),
    ("model_name",),
)
V0_PREEMPTIONS = Family("counter", "vllm:num_preemptions_total", "preemptions", ("model_name",))
V0_CACHE = Family("gauge", "vllm:cache_config_info", "CacheConfig", _CACHE_LABELS)
SGLANG = _gauges(
    "sglang:",
    ("num_running_reqs", "num_used_tokens", "token_usage", "num_queue_reqs", "cache_hit_rate", "max_total_num_tokens"),
    ("model_name", "engine_type", "tp_rank", "pp_rank"),
)

FAMILIES: dict[str, list[Family]] = {
    "vllm-v1": [V1_RUNNING, V1_WAITING, V1_KV, V1_PREEMPTIONS, V1_QUERIES, V1_HITS, V1_TTFT, V1_CACHE],
    "vllm-v0": [V0_RUNNING, V0_WAITING, V0_SWAPPED, V0_GPU_KV, V0_CPU_KV, V0_PREEMPTIONS, V0_CACHE],
    "sglang": SGLANG,
}
"""Every family a flavour declares, in the order it registers them (declared even with no series)."""
POINTS: dict[str, Callable[[Sequence[EngineState]], list[Point]]] = {
    "vllm-v1": _vllm_v1,
    "vllm-v0": _vllm_v0,
    "sglang": _sglang,
}
