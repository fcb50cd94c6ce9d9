"""The answers Prometheus would give the fleet's queries (sources/prometheus/queries.py), computed in-process
from the simulated fleet's samples, so `fleet --demo` needs no Prometheus and goes through the same join and
judge (`sources/prometheus/fleet.build`, `diagnosis/fleet.judge_fleet`) as a real server's answers.

Each query is reproduced as PromQL evaluates it at one moment: an instant selector takes each series' newest
sample within the 5 min lookback; `max by`/`count by`/`sum by` keep only the listed labels (empty ones
dropped, as Prometheus drops them); `rate(...[2m])` is the counter's increase over the window's first and
last samples, extrapolated to the window's edges as Prometheus 2.x's `extrapolatedRate` does (its range
includes the sample at the window's start)."""

from __future__ import annotations

import asyncio
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from gpumem_tui.demo.fleet_series import FleetNodeSpec, series_rows
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Result, Series
from gpumem_tui.sources.prometheus.fleet import build
from gpumem_tui.sources.prometheus.node_feed import NodeFeed
from gpumem_tui.sources.prometheus.node_sample import NodeRead, only
from gpumem_tui.sources.prometheus.queries import (
    ENGINE_BANDS,
    ENGINE_KEY,
    EXPORTED,
    EXPORTED_ENGINE,
    GPU_KEY,
    NODE_LABELS,
    POD_LABELS,
)
from gpumem_tui.sources.prometheus.records import FleetSample

LOOKBACK_S = 300.0
"""Prometheus's default lookback delta for an instant selector."""
SEEN_S = 3600.0
"""queries.LOOK_BACK (1h)."""
RATE_WINDOW_S = 120.0

DEMO_FLEET = (
    # as reference/fleet.md 1.2's setups: Kubernetes with exported_pod (honorLabels false), with plain pod
    # (honorLabels true, dcgm-exporter after 4.8.2), bare metal without FB_RESERVED, one node that also runs
    # `gpumem-tui export` and one that runs only it, one whose exporter stopped, one model served two ways
    FleetNodeSpec("node-a", "healthy-8b", "exported_pod", "Hostname", settings={"enable_prefix_caching": "False"}),
    FleetNodeSpec("node-b", "busy-node", "pod", "hostname"),
    FleetNodeSpec("node-c", "noisy-neighbour", "bare", "Hostname", reserved=False),
    FleetNodeSpec("node-d", "kv-pressure", "exported_pod", "Hostname"),
    FleetNodeSpec("node-e", "k8s-two-pods", "exported_pod", "Hostname", until_s=30),
    FleetNodeSpec("node-f", "idle-node", "pod", "hostname"),
    FleetNodeSpec("node-g", "healthy-8b", "exported_pod", "Hostname", virtual_gpus=True),
    FleetNodeSpec("node-h", "wrong-precision", "exported_pod", "Hostname", exporter=True),
    # a node that runs only `gpumem-tui export`: its memory, engine, plan and other processes are the exporter's
    FleetNodeSpec("node-i", "tp4-70b", "exported_pod", "Hostname", exporter=True, dcgm=False, vllm=False),
)
DEMO_AT_S, DEMO_STEP_S = 120.0, 5.0
"""The moment of the demo (two minutes in: preemption rates have their window) and dcgm-exporter's step."""
DEMO_SOURCE = f"demo: {len(DEMO_FLEET)} simulated nodes at {DEMO_AT_S:.0f} s"

Row = tuple[str, Mapping[str, str], float, float]
Key = tuple[tuple[str, str], ...]


def demo_sample(specs: Iterable[FleetNodeSpec], at_s: float, step_s: float, source: str) -> FleetSample:
    """The FleetSample of the simulated fleet at offset `at_s` (its nodes sampled every `step_s`)."""
    rows = list(series_rows(specs, at_s, step_s))
    now = max(at for *_, at in rows)
    return build(source, now, answers(rows, now), {}, stale=stale)


def demo_fleet() -> FleetSample:
    """The simulated fleet of `fleet --demo` and `fleet check --demo`."""
    return demo_sample(DEMO_FLEET, DEMO_AT_S, DEMO_STEP_S, DEMO_SOURCE)


def node_read(sample: FleetSample, node: str) -> NodeRead:
    """One node of a simulated fleet's sample, as `read_node` reads it from a Prometheus (the simulator
    publishes no per-process series: `gpumem-tui export`'s processes are none)."""
    return NodeRead(only(sample, node))


def demo_node_feed(node: str, sample: Callable[[], FleetSample] = demo_fleet) -> NodeFeed:
    """The single-node screen's feed of one node of `fleet --demo` (`sample`: the fleet, computed once)."""
    cached: list[FleetSample] = []

    async def read() -> NodeRead:
        if not cached:
            cached.append(await asyncio.to_thread(sample))
            feed.at = cached[0].evaluated_at  # the simulated fleet's own moment: its data ages against it
        return node_read(cached[0], node)

    feed = NodeFeed(read, node, f"{DEMO_SOURCE}, node {node}")
    return feed


def answers(rows: list[Row], now: float) -> dict[str, Result]:
    """Each query name of sources/prometheus/fleet.QUERY_NAMES -> its result at `now`."""
    history: dict[Key, list[tuple[float, float]]] = defaultdict(list)
    for name, labels, value, at in rows:
        if at <= now:
            history[_identity(name, labels)].append((at, value))
    latest: dict[Key, tuple[float, float]] = {}
    for key, points in history.items():
        at, value = max(points)
        if now - at < LOOKBACK_S:
            latest[key] = (at, value)

    def named(pattern: str) -> list[tuple[dict[str, str], float, float]]:
        match = re.compile(pattern).fullmatch
        return [(dict(key), v, at) for key, (at, v) in latest.items() if match(dict(key)["__name__"])]

    used = named("DCGM_FI_DEV_FB_USED")
    seen_used = [
        dict(key)
        for key, points in history.items()
        if dict(key)["__name__"] == "DCGM_FI_DEV_FB_USED" and any(now - at < SEEN_S for at, _ in points)
    ]
    rates = []
    for key, points in history.items():
        if dict(key)["__name__"] != "vllm:num_preemptions_total":
            continue
        window = sorted(p for p in points if now - p[0] <= RATE_WINDOW_S)
        if len(window) >= 2:
            rates.append((dict(key), 60 * extrapolated_rate(window, now), now))
    exporters_seen = [
        (dict(key), max(at for at, _ in points if now - at < SEEN_S), now)
        for key, points in history.items()
        if dict(key)["__name__"] == "gpumem_sample_timestamp_seconds" and any(now - at < SEEN_S for at, _ in points)
    ]
    vllm_jobs = {
        dict(key).get("job")
        for key, points in history.items()
        if dict(key)["__name__"] == "vllm:cache_config_info" and any(now - at < SEEN_S for at, _ in points)
    }
    return {
        "gpu_memory": _by(named("DCGM_FI_DEV_FB_(USED|FREE|RESERVED)"), (*NODE_LABELS, *GPU_KEY, "__name__"), max),
        "gpu_instances": _by(
            [
                (labels, v, at)
                for labels, v, at in named("DCGM_FI_DEV_FB_(USED|FREE|RESERVED)|DCGM_FI_PROF_GR_ENGINE_ACTIVE")
                if labels.get("GPU_I_ID")
            ],
            (*NODE_LABELS, *GPU_KEY, "__name__"),
            len,
        ),
        "gpu_pods": _by(used, (*NODE_LABELS, *GPU_KEY, *POD_LABELS), len),
        "nodes_age": _by([(labels, now - at, now) for labels, _, at in used], NODE_LABELS, min),
        "nodes_seen": _by([(labels, 1.0, now) for labels in seen_used], NODE_LABELS, len),
        "exporters_seen": _by(exporters_seen, NODE_LABELS, max),
        "engines": _by(
            named("vllm:(kv_cache_usage_perc|gpu_cache_usage_perc|num_requests_running)"),
            (*ENGINE_KEY, "__name__"),
            max,
        ),
        "waiting": _by([row for row in named("vllm:num_requests_waiting") if row[1] != 0], ENGINE_KEY, max),
        "engine_counters": Result(
            [
                Series({**s.labels, "gauge": gauge}, s.value, now)
                for gauge, found in (
                    ("requests_waiting", _by(named("vllm:num_requests_waiting"), ENGINE_KEY, len)),
                    ("preemptions_per_min", _by(rates, ENGINE_KEY, len)),
                )
                for s in found.series
            ]
        ),
        "pools": Result([Series(labels, v, now) for labels, v, _ in named("vllm:cache_config_info")]),
        "sleeping": _by(
            [
                (labels, v, at)
                for labels, v, at in named("vllm:engine_sleep_state")
                if labels.get("sleep_state") != "awake" and v == 1
            ],
            (*ENGINE_KEY, "sleep_state"),
            max,
        ),
        "preemptions": Result([s for s in _by(rates, ENGINE_KEY, sum).series if s.value != 0]),
        "node_findings": _by(
            [(labels, at, now) for labels, _, at in named("gpumem_finding_active")],
            (*NODE_LABELS, "code", "severity", "gpu", "pid", "endpoint", "model_name"),
            max,
        ),
        "targets_down": Result(
            [Series(labels, v, now) for labels, v, _ in named("up") if v == 0 and labels.get("job") in vllm_jobs]
        ),
        **_exported(named, now),
    }


def _exported(named: Callable[[str], list[tuple[dict[str, str], float, float]]], now: float) -> dict[str, Result]:
    """The answers to the queries of `gpumem-tui export`'s series (sources/prometheus/gpumem_export.py)."""
    memory = named(EXPORTED)
    processes = named("gpumem_process_memory_used_bytes")
    bands = [row for row in named("gpumem_plan_bytes") if re.fullmatch(ENGINE_BANDS, row[0].get("band", ""))]
    weights = [row for row in named("gpumem_plan_bytes") if row[0].get("band") == "weights"]
    return {
        "exported_node_memory": _by(
            _rows(_by(memory, (*NODE_LABELS, "UUID", "__name__"), max), now), (*NODE_LABELS, "__name__"), sum
        ),
        "exported_node_gpus": _by(
            _rows(_by(memory, (*NODE_LABELS, "UUID", "modelName", "__name__"), max), now),
            (*NODE_LABELS, "modelName", "__name__"),
            len,
        ),
        "exported_gpu_memory": _by(memory, (*NODE_LABELS, "UUID", "gpu", "modelName", "__name__"), max),
        "node_processes": _by(_rows(_by(processes, (*NODE_LABELS, "UUID", "pid"), max), now), NODE_LABELS, sum),
        "gpu_processes": _by(processes, (*NODE_LABELS, "UUID", "pid", "process_name", *POD_LABELS), max),
        "engine_plans": _by(_rows(_by(bands, (*EXPORTED_ENGINE, "UUID", "band"), max), now), EXPORTED_ENGINE, sum),
        "engine_plan_gpus": _by(weights, (*EXPORTED_ENGINE, "UUID"), max),
        "exported_engines": _by(
            named("gpumem_engine_kv_cache_(usage_ratio|pool_tokens)"), (*EXPORTED_ENGINE, "__name__"), max
        ),
        "exporters_age": _by(
            [(labels, now - at, now) for labels, _, at in named("gpumem_sample_timestamp_seconds")], NODE_LABELS, min
        ),
    }


def _rows(result: Result, now: float) -> list[tuple[dict[str, str], float, float]]:
    """An inner aggregation's answer as the rows of an outer one."""
    return [(dict(s.labels), s.value, now) for s in result.series]


def extrapolated_rate(points: list[tuple[float, float]], now: float, window_s: float = RATE_WINDOW_S) -> float:
    """Per second over the window ending at `now`: Prometheus's extrapolatedRate for a counter (resets
    added back; extrapolated to an edge within 1.1 average steps of it, else by half a step; never below 0)."""
    (first_at, first), (last_at, _) = points[0], points[-1]
    increase = sum(b - a if b >= a else b for (_, a), (_, b) in zip(points, points[1:], strict=False))
    sampled = last_at - first_at
    step = sampled / (len(points) - 1)
    to_start, to_end = first_at - (now - window_s), now - last_at
    if increase > 0 and first >= 0:
        to_start = min(to_start, sampled * first / increase)
    threshold = step * 1.1
    to_start = to_start if to_start < threshold else step / 2
    to_end = to_end if to_end < threshold else step / 2
    return increase * (sampled + to_start + to_end) / sampled / window_s


def _identity(name: str, labels: Mapping[str, str]) -> Key:
    """A series' identity as Prometheus stores it: its name and non-empty labels."""
    return tuple(sorted({"__name__": name, **{k: v for k, v in labels.items() if v}}.items()))


def _by(
    found: list[tuple[dict[str, str], float, float]],
    keep: tuple[str, ...],
    reduce: Callable[[list[float]], float],
) -> Result:
    """`<reduce> by (keep) (...)`: the values grouped by the kept labels, each group reduced to one."""
    groups: dict[Key, list[float]] = defaultdict(list)
    for labels, value, _ in found:
        if math.isnan(value):
            continue
        groups[tuple(sorted((k, labels[k]) for k in keep if labels.get(k)))].append(value)
    return Result([Series(dict(key), float(reduce(values)), 0.0) for key, values in groups.items()])
