"""The fleet over time: a few fleet-wide series read with range queries (reference/fleet.md 4.1), for the
screen's history line and `fleet snapshot --history`.

Each series is one number per step for the whole fleet, reduced on the server, so the answer is a few
hundred points whatever the fleet's size: GPU memory used, free and reserved (each card once: virtual-GPU
copies deduplicated and a MIG card's instances folded into it, as the sample's node sums do), the highest
KV-cache usage of any engine, requests waiting, and preemptions per minute. The step is the span over POINTS
(at least 1 s), so Prometheus's limit of 11,000 points a series is never reached."""

from __future__ import annotations

import asyncio
import math
import re

from gpumem_tui.records import Record
from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError, RangeResult, sorted_answers
from gpumem_tui.sources.prometheus.engine_series import NAMES, SAID, pattern
from gpumem_tui.sources.prometheus.queries import CARD_ID, ENGINE_KEY, FB, NODE_LABELS, Queries

POINTS = 120
"""Steps over the span: a 1 h history is one point per 30 s, dcgm-exporter's own interval."""
MIB = 2**20
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


class FleetHistory(Record):
    """Fleet-wide series from `start` to `end` every `step_s` (Unix seconds). A point is None where the
    fleet gave no number then (no series, or a NaN reading); a series that could not be read at all is
    missing from `series` with its reason in `unknown`."""

    start: float
    end: float
    step_s: float
    series: dict[str, list[float | None]] = {}
    unknown: dict[str, str] = {}
    gaps: dict[str, str] = {}
    """A series with points that are NaN -> why (a NaN reading makes the fleet's number unknown then)."""

    @property
    def span_s(self) -> float:
        return self.end - self.start


def parse_span(text: str) -> float:
    """`1h`, `30m`, `90s`, `2d` or seconds (`3600`) -> seconds; a ValueError in words otherwise."""
    match = _DURATION.fullmatch(text.strip())
    seconds = float(match.group(1)) * _SECONDS[match.group(2)] if match else math.nan
    if not 60 <= seconds <= 7 * 86400:
        raise ValueError(f"--history {text!r}: a span from 1m to 7d, such as 30m, 1h or 6h")
    return seconds


def span_words(seconds: float) -> str:
    """`1 h`, `30 min`, `2 min`, `90 s`."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def step_for(span_s: float) -> float:
    return max(1.0, math.ceil(span_s / POINTS))


def history_queries(queries: Queries, step_s: float) -> dict[str, str]:
    """Each fleet-wide series as PromQL (memory in MiB as dcgm-exporter writes it, KV usage a fraction)."""
    metric, names = queries.metric, queries.names
    # with --node-label, a GPU whose series lack that label names no node in the sample: not counted here either
    named = "" if queries.labels.node == "auto" else f'{queries.labels.node}!=""'
    each = f"max by ({', '.join((*NODE_LABELS, *CARD_ID, '__name__'))}) ({names(FB, named)})"
    engines = ", ".join(ENGINE_KEY)
    kv = names(pattern(NAMES.kv_usage))
    window = f"{max(120, int(step_s))}s"
    return {
        "memory": f"sum by (__name__) ({each})",
        "kv_usage_max": f"max(max by ({engines}) ({kv}))",
        "waiting": f"sum(max by ({engines}) ({metric(NAMES.waiting)}))",
        "preemptions_per_min": f"60 * sum(rate({metric(NAMES.preemptions)}[{window}]))",
    }


MEMORY_FIELDS = {"DCGM_FI_DEV_FB_USED": "used_bytes", "DCGM_FI_DEV_FB_FREE": "free_bytes"}
MEMORY_FIELDS["DCGM_FI_DEV_FB_RESERVED"] = "reserved_bytes"
ENGINE_SERIES = ("kv_usage_max", "waiting", "preemptions_per_min")
HISTORY_SERIES = (*MEMORY_FIELDS.values(), *ENGINE_SERIES)
"""Every series a history may hold (docs/fleet-json.md lists them)."""


async def read_history(client: PrometheusClient, queries: Queries, end: float, span_s: float) -> FleetHistory:
    """The fleet's series over the `span_s` before `end`. Raises PrometheusError when none could be read."""
    step = step_for(span_s)
    start = end - span_s
    asked = history_queries(queries, step)
    answers = await asyncio.gather(
        *(client.query_range(q, start, end, step) for q in asked.values()), return_exceptions=True
    )
    results, failures = sorted_answers(asked, answers, RangeResult)
    if not results:
        raise next(a for a in answers if isinstance(a, PrometheusError))
    return history_of(start, end, step, results, failures)


def history_of(
    start: float, end: float, step: float, results: dict[str, RangeResult], failures: dict[str, str]
) -> FleetHistory:
    """The FleetHistory of range answers (pure: canned answers in, record out)."""
    steps = [start + i * step for i in range(int(round((end - start) / step)) + 1)]
    series: dict[str, list[float | None]] = {}
    unknown: dict[str, str] = {}
    gaps: dict[str, str] = {}
    memory = results.get("memory")
    if memory is not None:
        by_name = {s.labels.get("__name__", ""): dict(s.points) for s in memory.series}
        for metric, field in MEMORY_FIELDS.items():
            if metric in by_name:
                _add(series, gaps, field, by_name[metric], steps, MIB)
            else:
                unknown[field] = f"no {metric} series over the span"
    for name in ENGINE_SERIES:
        result = results.get(name)
        if result is not None and result.series:
            _add(series, gaps, name, dict(result.series[0].points), steps)
        elif result is not None:
            unknown[name] = f"no {SAID} series over the span"
    for name, why in failures.items():
        for field in MEMORY_FIELDS.values() if name == "memory" else (name,):
            unknown[field] = f"the query failed: {why}"
    return FleetHistory(start=start, end=end, step_s=step, series=series, unknown=unknown, gaps=gaps)


def _add(
    series: dict[str, list[float | None]],
    gaps: dict[str, str],
    field: str,
    found: dict[float, float],
    steps: list[float],
    scale: float = 1.0,
) -> None:
    """The field's value at each step (None where there is none or it is not a number), and where a reading
    was NaN, how many."""
    series[field] = [
        value * scale if (value := found.get(t)) is not None and math.isfinite(value) else None for t in steps
    ]
    nan = sum(1 for t in steps if (value := found.get(t)) is not None and math.isnan(value))
    if nan:
        gaps[field] = f"a reading was NaN ({nan} of {len(steps)} points)"
