"""The fleet screen's refresh by exception (`Queries.over`): an engine's KV usage and requests running read one by
one only where its KV usage is at or over the saturation fraction, and per model on the server for the rest
(`Queries.model_gauges`): at 10,000 engines, a few series a refresh where there were 20,000. What is read
when, and why: docs/design/queries.md."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

from gpumem_tui.sources.prometheus.client import Result
from gpumem_tui.sources.prometheus.records import FleetEngine, ModelGauges


def quiet_why(over: float) -> str:
    """Why an engine read by exception has no KV usage or requests running of its own: true also of one whose KV
    usage is NaN or not sent (no number is at or over the fraction)."""
    return (
        f"not read one by one: the fleet screen reads an engine's KV usage and requests running where its KV usage "
        f"is at or over {over * 100:g} %, the others per model"
    )


FIGURES = (
    ("kv_usage_max", "kv_usage", "kv_usage_fraction"),
    ("requests_running", "requests_running", "requests_running"),
)
"""Each figure of a model: its field, its gauge's name in the answer, the engines' field it is of."""


def model_gauges(
    results: Mapping[str, Result], failures: Mapping[str, str], engines: Iterable[FleetEngine], quiet: str
) -> dict[str, ModelGauges]:
    """Each model's (`model_name`) gauges of the `model_gauges` answer, for the engines of the sample: a figure
    only where as many engines of the model report it as the sample has (`model_counts`; fewer: one stopped
    reporting; more: an engine's series repeated under other labels, which a sum would count twice), and none of
    them has it unknown for another reason than `quiet` (its target is down: its last values are not its own)."""
    failure = next(
        (f"the query failed: {failures[n]}" for n in ("model_gauges", "model_counts") if n in failures), None
    )
    if failure is None and "model_counts" not in results:
        failure = "how many engines of each model report it is not read yet"
    served: Counter[str] = Counter()
    unread: dict[tuple[str, str], str] = {}  # (model, engines' field) -> the first engine's reason
    for e in engines:
        served[e.model_name] += 1
        for _, _, field in FIGURES:
            why = e.unknown.get(field) if e.unknown else None
            if why is not None and why != quiet:
                unread.setdefault((e.model_name, field), f"{e.name}: {why}")
    values: dict[tuple[str, str], float] = {}
    for name in ("model_gauges", "model_counts"):
        for s in results[name].series if name in results else ():
            values[(s.labels.get("model_name") or "?", s.labels.get("gauge", ""))] = s.value
    found = {}
    for model, count in served.items():
        unknown: dict[str, str] = {}
        figures = {}
        for field, gauge, of in FIGURES:
            why = unread.get((model, of))
            if why is not None:
                unknown[field] = why
            figures[field] = None if why is not None else _figure(values, model, count, field, gauge, failure, unknown)
        found[model] = ModelGauges(**figures, unknown=unknown)
    return found


def _figure(
    values: dict[tuple[str, str], float],
    model: str,
    engines: int,
    field: str,
    gauge: str,
    failure: str | None,
    unknown: dict[str, str],
) -> float | None:
    """One figure of a model, or None with the reason in `unknown`."""
    if failure is not None:
        unknown[field] = failure
        return None
    reporting = values.get((model, f"{gauge}_engines"), 0.0)
    value = values.get((model, field if field == "requests_running" else gauge + "_max"))
    if reporting != engines:
        said = "engine reports" if reporting == 1 else "engines report"
        unknown[field] = (
            f"{reporting:g} of its {engines} {said} it"
            if reporting < engines
            else f"{reporting:g} series of it for {engines} engine(s): one's series repeated under other labels"
        )
        return None
    if value is None or not math.isfinite(value) or value < 0:
        unknown[field] = "an engine reported no number (NaN or below 0)"
        return None
    return value
