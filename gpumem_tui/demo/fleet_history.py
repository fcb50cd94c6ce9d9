"""The range answers Prometheus would give the fleet's history queries (sources/prometheus/history.py),
computed in-process from the simulated fleet's samples for `fleet --demo`, evaluated step by step as a range
query is: at each step the same forms as an instant query's (demo/promql.py)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from gpumem_tui.demo.fleet_answers import DEMO_AT_S, demo_rows
from gpumem_tui.demo.promql import Row, Stored, evaluate
from gpumem_tui.sources.prometheus.answer_forms import By, Form, Pick, Rate
from gpumem_tui.sources.prometheus.client import RangeResult, RangeSeries
from gpumem_tui.sources.prometheus.engine_series import NAMES, pattern
from gpumem_tui.sources.prometheus.history import MEMORY_FIELDS, FleetHistory, history_of, step_for
from gpumem_tui.sources.prometheus.queries import CARD_ID, ENGINE_KEY, NODE_LABELS

FORMS: dict[str, Form] = {
    "memory": By(
        "sum", ("__name__",), By("max", (*NODE_LABELS, *CARD_ID, "__name__"), Pick(pattern(tuple(MEMORY_FIELDS))))
    ),
    "kv_usage_max": By("max", (), By("max", ENGINE_KEY, Pick(pattern(NAMES.kv_usage)))),
    "waiting": By("sum", (), By("max", ENGINE_KEY, Pick(pattern(NAMES.waiting)))),
}
"""history.history_queries' series, but preemptions (its window follows the step)."""


def demo_history(rows: Iterable[Row], start: float, end: float, step: float) -> FleetHistory:
    """The fleet-wide series of these samples from `start` to `end` every `step` seconds."""
    stored = Stored(rows)
    forms = {**FORMS, "preemptions_per_min": By("sum", (), Rate(pattern(NAMES.preemptions), max(120.0, step)))}
    answers: dict[str, dict[tuple, list[tuple[float, float]]]] = {name: defaultdict(list) for name in forms}
    for i in range(int(round((end - start) / step)) + 1):
        t = start + i * step
        for name, form in forms.items():
            for labels, value in evaluate(form, stored, t):
                scale = 60 if name == "preemptions_per_min" else 1
                answers[name][tuple(labels.items())].append((t, scale * value))
    results = {
        name: RangeResult([RangeSeries(dict(labels), found) for labels, found in series.items()])
        for name, series in answers.items()
    }
    return history_of(start, end, step, results, {})


def demo_fleet_history(span_s: float) -> FleetHistory:
    """The history of `fleet --demo`: its simulated run up to the demo's moment, at most `span_s` of it."""
    rows = demo_rows()
    end = max(at for *_, at in rows)
    span = min(span_s, DEMO_AT_S)
    return demo_history(rows, end - span, end, step_for(span))
