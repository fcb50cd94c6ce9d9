"""Reading the selected samples per served model: values keyed by label set, non-finite readings noted."""

from __future__ import annotations

from collections.abc import Sequence

from gpumem_tui.sources.engines.prometheus import Families, finite

Key = tuple[str | None, ...]


LIMIT = 1e15  # no engine has a quadrillion blocks, tokens or requests

class SeriesReader:
    """Values of the selected families, looked up by the labels that tell served models apart."""

    def __init__(self, families: Families, key_labels: Sequence[str]) -> None:
        self.families = families
        self.key_labels = tuple(key_labels)
        self.notes: dict[Key, list[str]] = {}

    def key(self, labels: dict[str, str]) -> Key:
        return tuple(labels.get(name) for name in self.key_labels)

    def keys(self, names: Sequence[str]) -> list[Key]:
        """Every label key that carries one of these metrics, in a stable order."""
        found = {self.key(s.labels) for name in names for s in self.families.get(name)}
        return sorted(found, key=lambda k: tuple(v or "" for v in k))

    def value(self, name: str, key: Key) -> float | None:
        """The reading of `name` for this key. Every metric read here is a count, a size or a fraction:
        NaN, infinity, a negative or an absurd value counts as missing and leaves a note."""
        for sample in self.families.get(name):
            if self.key(sample.labels) == key:
                if plausible(sample.value) is None:
                    self.notes.setdefault(key, []).append(f"{name} reads {sample.value:g}; shown as missing")
                return plausible(sample.value)
        return None

    def first(self, names: Sequence[str], key: Key) -> float | None:
        """The first of several names (a metric and its older name) that has a reading."""
        for name in names:
            got = self.value(name, key)
            if got is not None:
                return got
        return None

    def present(self, name: str) -> bool:
        return name in self.families.present


def plausible(value: float | None) -> float | None:
    """A finite reading from 0 to 10^15, else None."""
    value = finite(value)
    return value if value is not None and 0 <= value <= LIMIT else None


def as_int(value: float | None) -> int | None:
    return None if value is None else int(round(value))


def label_int(labels: dict[str, str], name: str) -> int | None:
    """An integer carried as a label value (`num_gpu_blocks="29750"`); "None" or junk is missing."""
    raw = labels.get(name)
    try:
        value = plausible(float(raw)) if raw not in (None, "", "None") else None
    except ValueError:
        return None
    return None if value is None else int(value)


def label_float(labels: dict[str, str], name: str) -> float | None:
    raw = labels.get(name)
    try:
        return plausible(float(raw)) if raw not in (None, "", "None") else None
    except ValueError:
        return None
