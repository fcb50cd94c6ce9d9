"""Prometheus text: keep only the wanted metric families, then parse those lines with prometheus_client.

A vLLM payload is mostly histograms the memory view never reads. Picking the few wanted lines
by name first (a cheap string test per line) and handing only those to the maintained parser
keeps a large payload cheap.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

from prometheus_client.parser import text_string_to_metric_families

MAX_LINE = 16 * 1024
"""Characters in one sample line: an engine's longest (vLLM's cache_config_info) is under 2 KiB; a longer
one is skipped with a note, so no single line can make the parse slow."""


class MetricsError(ValueError):
    """A payload that cannot be read as engine metrics; the message says why in plain words."""


@dataclass(frozen=True)
class Series:
    """One series: its label set and value."""

    labels: dict[str, str]
    value: float


@dataclass
class Families:
    """The selected families: sample name -> its series, and every wanted name the payload declared or used."""

    samples: dict[str, list[Series]] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    """What was left unread, in words (lines too long to be an engine's)."""

    def get(self, name: str) -> list[Series]:
        return self.samples.get(name, [])


def _line_name(line: str) -> str:
    """The metric name a line is about: `# TYPE name ...`, `# HELP name ...` or `name{...} value`."""
    if line.startswith("#"):
        parts = line.split(None, 3)
        return parts[2] if len(parts) > 2 and parts[1] in ("TYPE", "HELP") else ""
    end = len(line)
    for stop in ("{", " ", "\t"):
        at = line.find(stop)
        if at != -1 and at < end:
            end = at
    return line[:end]


def select_lines(text: str, names: Iterable[str]) -> tuple[list[str], set[str]]:
    """Sample lines of the wanted names, in payload order, and every wanted name declared or sampled.

    TYPE lines only mark a name as declared (an engine that has not logged stats yet declares its
    metrics with no samples); the parser does not need them, since values are read by sample name.
    """
    wanted = frozenset(names)
    prefixes = _stems(wanted)
    kept, declared = [], set()
    for line in text.splitlines():
        if not line.startswith(prefixes):
            continue
        name = _line_name(line)
        if name in wanted:
            declared.add(name)
            if line[0] != "#":
                kept.append(line)
    return kept, declared


@cache
def _stems(wanted: frozenset[str]) -> tuple[str, ...]:
    """Short distinct prefixes of the wanted names (`vllm:num_`, `sglang:token_`) for a cheap first test.

    Fewer, shorter prefixes make `str.startswith` faster on the thousands of histogram lines it rejects;
    the exact name is checked after.
    """
    stems = set()
    for name in wanted:
        colon = name.find(":") + 1
        cut = name.find("_", colon)
        stems.add(name[: cut + 1] if cut != -1 else name)
    return (*sorted(stems), "# TYPE ")


def parse_families(text: str, names: Iterable[str]) -> Families:
    """Select the wanted names, parse them, and refuse duplicate series (two values for one label set)."""
    wanted = set(names)
    selected, declared = select_lines(text, wanted)
    lines = [line for line in selected if len(line) <= MAX_LINE]
    out = Families(present=declared)
    if too_long := len(selected) - len(lines):
        out.notes.append(f"{too_long:,} metrics line(s) over {MAX_LINE // 1024} KiB skipped (no engine writes one)")
    try:
        families = list(text_string_to_metric_families("\n".join(lines) + "\n"))
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        raise MetricsError(f"malformed metrics line ({_short(exc)}); the payload may be truncated") from None
    seen: set[tuple[str, tuple]] = set()
    for family in families:
        for sample in family.samples:
            if sample.name not in wanted:
                continue
            key = (sample.name, tuple(sorted(sample.labels.items())))
            if key in seen:
                series = _short(f"{sample.name}{_labels(sample.labels)}")
                raise MetricsError(f"duplicate series {series}: two values for one series")
            seen.add(key)
            out.samples.setdefault(sample.name, []).append(Series(dict(sample.labels), _float(sample.value)))
    return out


def _float(value: float) -> float:
    """The parser gives an int for an integer written out; one too large for a float is an infinity
    (a reading that means nothing, shown as missing with a note)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def finite(value: float | None) -> float | None:
    """The value, or None for NaN and infinities (a reading that means nothing is a missing reading)."""
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return value


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f"{k}={v!r}" for k, v in sorted(labels.items())) + "}"


def _short(what: BaseException | str) -> str:
    text = str(what).replace("\n", " ")
    return text if len(text) <= 120 else text[:117] + "..."
