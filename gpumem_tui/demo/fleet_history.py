"""The range answers Prometheus would give the fleet's history queries (sources/prometheus/history.py),
computed in-process from the simulated fleet's samples for `fleet --demo`, evaluated step by step as a range
query is: at each step, every series' newest sample within the 5 min lookback, then the same reductions."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable

from gpumem_tui.demo.fleet_answers import DEMO_AT_S, DEMO_FLEET, DEMO_STEP_S, LOOKBACK_S, Key, Row, extrapolated_rate
from gpumem_tui.demo.fleet_series import series_rows
from gpumem_tui.sources.prometheus.client import RangeResult, RangeSeries
from gpumem_tui.sources.prometheus.history import MEMORY_FIELDS, FleetHistory, history_of, step_for
from gpumem_tui.sources.prometheus.queries import CARD_ID, ENGINE_KEY, NODE_LABELS

KV_NAMES = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")


def demo_history(rows: Iterable[Row], start: float, end: float, step: float) -> FleetHistory:
    """The fleet-wide series of these samples from `start` to `end` every `step` seconds."""
    points: dict[Key, list[tuple[float, float]]] = defaultdict(list)
    for name, labels, value, at in rows:
        key = tuple(sorted({"__name__": name, **{k: v for k, v in labels.items() if v}}.items()))
        points[key].append((at, value))
    for found in points.values():
        found.sort()
    steps = [start + i * step for i in range(int(round((end - start) / step)) + 1)]
    answers: dict[str, dict[tuple, list[tuple[float, float]]]] = {
        "memory": defaultdict(list),
        "kv_usage_max": defaultdict(list),
        "waiting": defaultdict(list),
        "preemptions_per_min": defaultdict(list),
    }
    window = max(120.0, step)
    for t in steps:
        latest = {}
        for key, found in points.items():
            at = bisect_right(found, (t, math.inf))
            if at and t - found[at - 1][0] < LOOKBACK_S:
                latest[key] = found[at - 1]
        memory: dict[tuple, float] = {}
        kv: dict[tuple, float] = {}
        waiting: dict[tuple, float] = {}
        rate = 0.0
        counted = False
        for key, (_, value) in latest.items():
            labels = dict(key)
            name = labels["__name__"]
            if name in MEMORY_FIELDS and not math.isnan(value):
                gpu = (name, *(labels.get(k, "") for k in (*NODE_LABELS, *CARD_ID)))
                memory[gpu] = max(value, memory.get(gpu, -math.inf))
            elif name in KV_NAMES and not math.isnan(value):
                engine = tuple(labels.get(k, "") for k in ENGINE_KEY)
                kv[engine] = max(value, kv.get(engine, -math.inf))
            elif name == "vllm:num_requests_waiting" and not math.isnan(value):
                engine = tuple(labels.get(k, "") for k in ENGINE_KEY)
                waiting[engine] = max(value, waiting.get(engine, -math.inf))
        for key, found in points.items():
            if dict(key)["__name__"] != "vllm:num_preemptions_total":
                continue
            inside = [p for p in found if t - window <= p[0] <= t]
            if len(inside) >= 2:
                rate, counted = rate + extrapolated_rate(inside, t, window), True
        sums: dict[str, float] = defaultdict(float)
        for (name, *_), value in memory.items():
            sums[name] += value
        for name, value in sums.items():
            answers["memory"][(("__name__", name),)].append((t, value))
        if kv:
            answers["kv_usage_max"][()].append((t, max(kv.values())))
        if waiting:
            answers["waiting"][()].append((t, sum(waiting.values())))
        if counted:
            answers["preemptions_per_min"][()].append((t, 60 * rate))
    results = {
        name: RangeResult([RangeSeries(dict(labels), found) for labels, found in series.items()])
        for name, series in answers.items()
    }
    return history_of(start, end, step, results, {})


def demo_fleet_history(span_s: float) -> FleetHistory:
    """The history of `fleet --demo`: its simulated run up to the demo's moment, at most `span_s` of it."""
    rows = list(series_rows(DEMO_FLEET, DEMO_AT_S, DEMO_STEP_S))
    end = max(at for *_, at in rows)
    span = min(span_s, DEMO_AT_S)
    return demo_history(rows, end - span, end, step_for(span))
