"""The forms of sources/prometheus/answer_forms.py computed in-process over a simulated fleet's samples, as
Prometheus 2.x evaluates the PromQL they stand for at one moment: what `fleet --demo` reads in place of a server.

An instant selector takes each series' newest sample within the lookback; `by` keeps only the listed labels
(an empty one dropped, as Prometheus drops it); `max` and `min` pass over NaN, `sum` is NaN with one;
`rate` is the counter's increase over the window's first and last samples, extrapolated to the window's edges
as Prometheus 2.x's `extrapolatedRate` does (its range includes the sample at the window's start)."""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from gpumem_tui.sources.prometheus import answer_forms as forms
from gpumem_tui.sources.prometheus.answer_forms import LOOKBACK_S, Form
from gpumem_tui.sources.prometheus.client import Result, Series

Row = tuple[str, Mapping[str, str], float, float]
"""(series name, labels, value, unix seconds): one sample as the simulated fleet makes it."""
Key = tuple[tuple[str, str], ...]
"""A series' identity as Prometheus stores it: its name and non-empty labels, sorted."""
Point = tuple[dict[str, str], float]
"""One series of an instant answer: its labels (sorted) and value."""


def identity(name: str, labels: Mapping[str, str]) -> Key:
    return tuple(sorted({"__name__": name, **{k: v for k, v in labels.items() if v}}.items()))


class Stored:
    """Samples as Prometheus stores them: each series with its points in time order."""

    def __init__(self, rows: Iterable[Row]) -> None:
        points: dict[Key, list[tuple[float, float]]] = defaultdict(list)
        keys: dict[tuple, Key] = {}  # each series' key by its name and labels as written: sorted once a series
        for name, labels, value, at in rows:
            written = (name, *labels, *labels.values())  # n names then n values: one reading only
            key = keys.get(written)
            if key is None:
                key = keys[written] = identity(name, labels)
            points[key].append((at, value))
        self.points = {key: sorted(found) for key, found in points.items()}
        self.name = {key: dict(key)["__name__"] for key in self.points}
        self._names = set(self.name.values())
        self._named: dict[str, list[Key]] = {}

    def named(self, names: str) -> list[Key]:
        """The series whose name matches `names` whole, in the order they were first sampled (each distinct
        name matched once: a few dozen names, hundreds of series)."""
        if names not in self._named:
            match = re.compile(names).fullmatch
            matches = {name: bool(match(name)) for name in self._names}
            self._named[names] = [key for key in self.points if matches[self.name[key]]]
        return self._named[names]

    def newest(self, key: Key, at: float, within: float) -> tuple[float, float] | None:
        """The series' newest (time, value) at or before `at`, less than `within` s before it."""
        points = self.points[key]
        i = bisect_right(points, (at, math.inf))
        return points[i - 1] if i and at - points[i - 1][0] < within else None

    def window(self, key: Key, at: float, within: float) -> list[tuple[float, float]]:
        """The series' points from `within` s before `at` to `at`, both included."""
        return [p for p in self.points[key] if at - within <= p[0] <= at]


def evaluate(form: Form, stored: Stored, at: float) -> list[Point]:
    """The series `form` answers at `at`."""
    return _STEPS[type(form)](form, stored, at)


def answer(form: Form, stored: Stored, at: float) -> Result:
    return Result([Series(labels, value, at) for labels, value in evaluate(form, stored, at)])


def _sorted(labels: Mapping[str, str]) -> dict[str, str]:
    return dict(sorted(labels.items()))


def _nameless(key: Key) -> dict[str, str]:
    return {k: v for k, v in key if k != "__name__"}


def _passes(labels: Mapping[str, str], where: tuple[tuple[str, str, str], ...]) -> bool:
    for label, op, value in where:
        has = labels.get(label, "")
        if (op == "=" and has != value) or (op == "!=" and has == value):
            return False
        if op == "=~" and not re.fullmatch(value, has):
            return False
    return True


def _pick(form: forms.Pick, stored: Stored, at: float) -> list[Point]:
    moment = at - form.offset
    found: list[Point] = []
    for key in stored.named(form.names):
        newest = stored.newest(key, moment, form.within)
        if newest is None or not _passes(dict(key), form.where):
            continue
        if form.value == "value":
            found.append((dict(key), float(newest[1])))
        else:
            found.append((_nameless(key), at - newest[0] if form.value == "age" else newest[0]))
    return found


def _rate(form: forms.Rate, stored: Stored, at: float) -> list[Point]:
    found: list[Point] = []
    for key in stored.named(form.names):
        window = stored.window(key, at, form.window)
        if len(window) >= 2:
            found.append((_nameless(key), form.per * extrapolated_rate(window, at, form.window)))
    return found


def _stamped(form: forms.Stamped, stored: Stored, at: float) -> list[Point]:
    steps = _steps(at, form.within, form.step)
    found: list[Point] = []
    for key in stored.named(form.names):
        newest = next((n for s in reversed(steps) if (n := stored.newest(key, s, LOOKBACK_S)) is not None), None)
        if newest is not None:
            found.append((_nameless(key), newest[0]))
    return found


def _steps(at: float, within: float, step: float) -> list[float]:
    """A subquery's steps: the multiples of `step` from `within` s before `at` to `at`."""
    first = math.ceil((at - within) / step) * step
    return [first + i * step for i in range(int((at - first) // step) + 1)]


def _reduce(op: str, values: list[float]) -> float:
    if op == "count":
        return float(len(values))
    if op == "sum":
        return float(sum(values))
    numbers = [v for v in values if not math.isnan(v)]
    if not numbers:
        return math.nan
    return float(max(numbers) if op == "max" else min(numbers))


def _by(form: forms.By, stored: Stored, at: float) -> list[Point]:
    groups: dict[Key, list[float]] = defaultdict(list)
    for labels, value in evaluate(form.of, stored, at):
        groups[tuple(sorted((k, labels[k]) for k in form.keep if labels.get(k)))].append(value)
    return [(dict(key), _reduce(form.op, values)) for key, values in groups.items()]


_TESTS: dict[str, Callable[[float, float], bool]] = {
    "!=": lambda a, b: a != b,
    "==": lambda a, b: a == b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
}


def _only(form: forms.Only, stored: Stored, at: float) -> list[Point]:
    test = _TESTS[form.test]
    return [(labels, value) for labels, value in evaluate(form.of, stored, at) if test(value, form.value)]


def go_float(value: float) -> str:
    """A number as Prometheus writes it in a label (Go's `FormatFloat(v, 'f', -1, 64)`)."""
    if math.isnan(value) or math.isinf(value):
        return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    return format(Decimal(repr(value)), "f").removesuffix(".0")


def _count_values(form: forms.CountValues, stored: Stored, at: float) -> list[Point]:
    counts: dict[Key, int] = defaultdict(int)
    for labels, value in evaluate(form.of, stored, at):
        kept = {k: labels[k] for k in form.keep if labels.get(k)}
        counts[tuple(sorted({**kept, form.label: go_float(value)}.items()))] += 1
    return [(dict(key), float(n)) for key, n in counts.items()]


def _labelled(form: forms.Labelled, stored: Stored, at: float) -> list[Point]:
    return [(_sorted({**labels, form.label: form.value}), v) for labels, v in evaluate(form.of, stored, at)]


def _match(labels: Mapping[str, str], on: tuple[str, ...] | None) -> tuple:
    if on is None:
        return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))
    return tuple(labels.get(label, "") for label in on)


def _either(form: forms.Either, stored: Stored, at: float) -> list[Point]:
    found: list[Point] = []
    seen: set[tuple] = set()
    for part in form.parts:
        points = evaluate(part, stored, at)
        found += [(labels, v) for labels, v in points if _match(labels, None) not in seen]
        seen |= {_match(labels, None) for labels, _ in points}
    return found


def _unless(form: forms.Unless, stored: Stored, at: float) -> list[Point]:
    other = {_match(labels, form.on) for labels, _ in evaluate(form.other, stored, at)}
    return [(labels, v) for labels, v in evaluate(form.of, stored, at) if _match(labels, form.on) not in other]


def _and(form: forms.And, stored: Stored, at: float) -> list[Point]:
    other = {_match(labels, form.on) for labels, _ in evaluate(form.other, stored, at)}
    return [(labels, v) for labels, v in evaluate(form.of, stored, at) if _match(labels, form.on) in other]


def _top(form: forms.Top, stored: Stored, at: float) -> list[Point]:
    best: dict[tuple, Point] = {}
    for labels, value in evaluate(form.of, stored, at):
        group = _match(labels, form.keep)
        if group not in best or value > best[group][1]:
            best[group] = (labels, value)
    return list(best.values())


_STEPS: dict[type, Callable[[Any, Stored, float], list[Point]]] = {
    forms.Pick: _pick,
    forms.Rate: _rate,
    forms.Stamped: _stamped,
    forms.By: _by,
    forms.Only: _only,
    forms.CountValues: _count_values,
    forms.Labelled: _labelled,
    forms.Either: _either,
    forms.Unless: _unless,
    forms.And: _and,
    forms.Top: _top,
}


def extrapolated_rate(points: list[tuple[float, float]], now: float, window_s: float) -> float:
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
