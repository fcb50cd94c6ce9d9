"""Reading the selected samples per served model: values keyed by label set, as the engine wrote them.

What cannot be true is judged once, downstream: the record drops what no reading can be (NaN, infinite,
negative: `readings.py`) and notes it, `engine_values` names the rest, and both are the finding
`engine_value_implausible`, the same for a live payload as for a recording."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.engines.prometheus import Families

Key = tuple[str | None, ...]


MAX_SERVED = 64
"""Records kept per payload: a payload naming thousands of models is summarised, not drawn."""


class SeriesReader:
    """Values of the selected families, looked up by the labels that tell served models apart.

    Each family is indexed once, on first use (label key -> the first sample's value), so a payload of
    N series costs O(N) however many models it names; `index_builds` counts the indexes built.
    """

    def __init__(self, families: Families, key_labels: Sequence[str]) -> None:
        self.families = families
        self.key_labels = tuple(key_labels)
        self._index: dict[str, dict[Key, float]] = {}
        self.index_builds = 0
        self.dropped = 0
        """How many label keys the last keys() left out."""

    def key(self, labels: dict[str, str]) -> Key:
        return tuple(labels.get(name) for name in self.key_labels)

    def keys(self, names: Sequence[str], served: Callable[[Key], object] = lambda key: key) -> list[Key]:
        """Every label key that carries one of these metrics, in a stable order, for at most MAX_SERVED
        served models (`served` names the model a key belongs to); `dropped` counts the models left out."""
        found = {key for name in names for key in self.indexed(name)}
        kept: list[Key] = []
        shown: set[object] = set()
        left_out: set[object] = set()
        for key in sorted(found, key=lambda k: tuple(v or "" for v in k)):
            model = served(key)
            if model in shown or len(shown) < MAX_SERVED:
                shown.add(model)
                kept.append(key)
            else:
                left_out.add(model)
        self.dropped = len(left_out)
        return kept

    def indexed(self, name: str) -> dict[Key, float]:
        """Label key -> value of `name`, built once; the first series wins where keys repeat."""
        index = self._index.get(name)
        if index is None:
            self.index_builds += 1
            index = {}
            for sample in self.families.get(name):
                index.setdefault(self.key(sample.labels), sample.value)
            self._index[name] = index
        return index

    def value(self, name: str, key: Key) -> float | None:
        """The value of `name` for this key as the engine sent it (NaN and negatives included: the record
        drops and names them)."""
        return self.indexed(name).get(key)

    def first(self, names: Sequence[str], key: Key) -> float | None:
        """The first of several names (a metric and its older name) that the payload carries."""
        for name in names:
            got = self.value(name, key)
            if got is not None:
                return got
        return None

    def present(self, name: str) -> bool:
        return name in self.families.present

    def cap_note(self, what: str) -> str | None:
        """`6,000 models reported; showing the first 64` when keys() left some out, else None."""
        if not self.dropped:
            return None
        return f"{self.dropped + MAX_SERVED:,} {what} reported; showing the first {MAX_SERVED}"


def with_note(records: list[EngineRecord], note: str | None) -> list[EngineRecord]:
    """The records, the first one carrying `note` (the cap's summary) when there is one."""
    if note is None or not records:
        return records
    first = records[0]
    return [first.model_copy(update={"notes": [*first.notes, note]}), *records[1:]]


def as_int(value: float | None) -> int | float | None:
    """A count as a whole number; NaN and infinities stay as they are, for the record to drop and name."""
    return value if value is None or not math.isfinite(value) else int(round(value))


def label_int(labels: dict[str, str], name: str) -> int | float | None:
    """An integer carried as a label value (`num_gpu_blocks="29750"`); "None" or junk is missing."""
    return as_int(label_float(labels, name))


def label_float(labels: dict[str, str], name: str) -> float | None:
    raw = labels.get(name)
    try:
        return float(raw) if raw not in (None, "", "None") else None
    except ValueError:
        return None
