"""One series of a query API answer checked against what the API documents, for a server (or a proxy) that does
not keep to it: labels a JSON object of strings, an instant value `[time, "number"]` (the time a JSON number,
the number a string: `"NaN"`, `"+Inf"` and `"-Inf"` included). A series that is not is skipped and counted by
reason (`Skipped`), so one bad series never loses the answer; a label value over MAX_LABEL_CHARS is cut; a
series whose labels an earlier one of the answer has is skipped too (a vector never holds two)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpumem_tui.text import literal

MAX_LABEL_CHARS = 1024
"""The longest label value kept whole: node, pod and model names are at most a few hundred characters; one of a
megabyte (a hostile exporter's) would be copied into every record and line that names it."""
SHOWN_CHARS = 160
"""The most of a skipped series' labels a note shows."""


@dataclass
class Skipped:
    """The series of one answer that were skipped, counted by reason, each with the first such series shown."""

    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)
    cut: int = 0
    """Series kept with a label value cut to MAX_LABEL_CHARS."""

    def add(self, reason: str, item: object) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        if reason not in self.first:
            self.first[reason] = shown(item)

    def notes(self) -> list[str]:
        """One line per reason, and one for the labels cut."""
        said = [
            f"{count:,} series of the answer skipped ({reason}), the first {self.first[reason]}"
            for reason, count in self.counts.items()
        ]
        if self.cut:
            said.append(
                f"{self.cut:,} series of the answer have a label value over {MAX_LABEL_CHARS:,} characters: cut"
            )
        return said


def shown(item: object) -> str:
    """A series by its labels as the API gave them (`{Hostname="node-a", gpu="0"}`), shown literally and cut."""
    metric = item.get("metric") if isinstance(item, Mapping) else item
    if isinstance(metric, Mapping):
        text = "{" + ", ".join(f'{literal(k)[:40]}="{literal(v)[:40]}"' for k, v in list(metric.items())[:12]) + "}"
    else:
        text = literal(item)[:SHOWN_CHARS]
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def labels(item: object, skipped: Skipped) -> dict[str, str] | None:
    """The series' labels (a value over MAX_LABEL_CHARS cut); None, counted in `skipped`, for a series that has
    none the API documents."""
    metric = item.get("metric") if isinstance(item, dict) else None
    if not isinstance(metric, dict):
        skipped.add("no labels object" if isinstance(item, dict) else "not a series object", item)
        return None
    if not all(isinstance(value, str) for value in metric.values()):
        skipped.add("a label value that is not a string", item)
        return None
    if any(len(value) > MAX_LABEL_CHARS for value in metric.values()):
        skipped.cut += 1
        return {name: value[:MAX_LABEL_CHARS] for name, value in metric.items()}
    return metric


def plain_labels(label_sets: list[Any]) -> bool:
    """Whether label sets read at once (answers.py, label_memo.py) may be kept so: each an object of strings, none
    too long in all (one read one by one is cut where a value is over MAX_LABEL_CHARS, or skipped)."""
    try:
        return max(map(len, map("".join, map(dict.values, label_sets))), default=0) <= MAX_LABEL_CHARS
    except TypeError:  # no object, or a value no string
        return False


def interned(labels: dict[str, str], strings: dict[str, str]) -> dict[str, str]:
    """`labels` (the answer's own dict) with each value the one object `strings` holds for it (added where new),
    in place: half the cost of a new dict. The names need not be: the JSON scanner makes each once a piece."""
    keep = strings.setdefault
    for name, value in labels.items():
        labels[name] = keep(value, value)
    return labels


def finite_run(values: list[float], stamps: Iterable[float]) -> bool:
    """Whether series read at once (answers.py, label_memo.py) may be kept so: no value an infinity (told from a
    number past a float's range one by one) and the times' sum finite (`1e308` twice is not: read one by one)."""
    try:
        return math.inf not in values and -math.inf not in values and math.isfinite(math.fsum(stamps))
    except OverflowError:
        return False


def instant(pair: Any) -> tuple[float, float] | str:
    """`[1767225600.5, "73400320000"]` -> (value, time); the reason it is not one otherwise."""
    if not isinstance(pair, list) or len(pair) != 2:
        return 'a value that is not [time, "number"]'
    return point(*pair)


def point(at: Any, value: Any) -> tuple[float, float] | str:
    """One sample's value and time; the reason it is not one otherwise. The value is a string as the API sends
    it (`"NaN"`, `"+Inf"`, `"-Inf"` are values); a JSON number there is a server that does not keep to the API."""
    if not isinstance(value, str):
        return f"a value that is a JSON {_json_kind(value)}, not a string"
    try:
        time = float(at) if isinstance(at, int | float) and not isinstance(at, bool) else math.nan
        number = float(value)
    except OverflowError:  # a JSON integer past a float's range
        time = math.nan
    except ValueError:
        return "a value that is not a number"
    if not math.isfinite(time):
        return "a time that is not a number"
    if math.isinf(number) and value not in ("+Inf", "-Inf", "Inf", "inf", "+inf", "-inf"):
        return "a value past a float's range"
    return number, time


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}.get(type(value), "value")
