"""Prometheus text: keep only the wanted metric families, then parse those lines with prometheus_client.

A vLLM payload is mostly histograms the memory view never reads. Picking the few wanted lines
by name first (one regex pass over the whole text) and handing only those to the maintained
parser keeps a large payload cheap; a line parsed before is not parsed again (`_samples`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

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


def select_lines(text: str, names: Iterable[str]) -> tuple[list[str], set[str]]:
    """Sample lines of the wanted names, in payload order, and every wanted name declared or sampled.

    One regex pass over the whole text (`_selector`) finds them; a line is what `str.splitlines` makes one.
    TYPE lines only mark a name as declared (an engine that has not logged stats yet declares its metrics
    with no samples); the parser does not need them, since values are read by sample name.
    """
    kept, declared = [], set()
    for match in _selector(frozenset(names)).finditer("\n" + _newlines(text)):
        sample, name = match.group("sample", "name")
        if sample is None:
            declared.add(match["declared"])
        else:
            declared.add(name)
            kept.append(sample)
    return kept, declared


_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
"""The line boundaries of `str.splitlines` besides the line feed (CR LF becomes an empty line more)."""


def _newlines(text: str) -> str:
    """The text with every line boundary written as a line feed, so the selector searches for one character
    (a character class is many times slower to search for). An engine's payload has none of the others."""
    for brk in _BREAKS:
        if brk in text:
            text = text.replace(brk, "\n")
    return text


@cache
def _selector(wanted: frozenset[str]) -> re.Pattern[str]:
    """A line of a wanted name, with the line feed before it: `name{...} value`, `name value` (the name ends
    at `{`, a space, a tab or the line's end), or `# TYPE name ...` (group `declared`: the word after TYPE).

    Starting with a literal line feed lets the regex engine skip from line to line in C, and the names as one
    trie (`_trie`) reject a histogram line after their shared prefix.
    """
    names = _trie(sorted(wanted)) if wanted else "(?!)"  # none wanted: a pattern that matches nothing
    return re.compile(
        rf"\n(?:(?P<sample>(?P<name>{names})(?=[{{ \t\n]|\Z)[^\n]*)|# TYPE [^\S\n]*(?P<declared>{names})(?=\s|\Z))"
    )


def _trie(words: list[str]) -> str:
    """A regex matching exactly these words, sorted, with shared prefixes written once: `a(?:b|c)`."""
    if not any(words):
        return ""
    tails: dict[str, list[str]] = {}
    for word in words:
        if word:
            tails.setdefault(word[0], []).append(word[1:])
    branches = [re.escape(head) + _trie(rest) for head, rest in tails.items()]
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return f"(?:{body})?" if "" in words else body


def parse_families(text: str, names: Iterable[str]) -> Families:
    """Select the wanted names, parse them, and refuse duplicate series (two values for one label set)."""
    wanted = set(names)
    selected, declared = select_lines(text, wanted)
    lines = [line for line in selected if len(line) <= MAX_LINE]
    out = Families(present=declared)
    if too_long := len(selected) - len(lines):
        out.notes.append(f"{too_long:,} metrics line(s) over {MAX_LINE // 1024} KiB skipped (no engine writes one)")
    try:
        samples = _samples(lines)
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        raise MetricsError(f"malformed metrics line ({_short(exc)}); the payload may be truncated") from None
    seen: set[tuple[str, tuple]] = set()
    for sample in samples:
        if sample.name not in wanted:
            continue
        key = (sample.name, tuple(sorted(sample.labels.items())))
        if key in seen:
            series = _short(f"{sample.name}{_labels(sample.labels)}")
            raise MetricsError(f"duplicate series {series}: two values for one series")
        seen.add(key)
        out.samples.setdefault(sample.name, []).append(Series(dict(sample.labels), _float(sample.value)))
    return out


KEPT_LINES = 4096
"""Parsed sample lines kept (`_samples`), each at most KEPT_LINE characters long: a few MiB at most."""
KEPT_LINE = 1024
_kept: dict[str, Sample] = {}


def forget_lines() -> None:
    """Drop every line kept: a bench that times a payload's first parse calls it before each run."""
    _kept.clear()


def _samples(lines: list[str]) -> list[Sample]:
    """Each line's sample as prometheus_client parses it. A line is parsed on its own terms (no TYPE line is
    kept, so each makes one sample), so one met before, the same text (an engine's settings, a counter that
    did not move), is not parsed again: a scrape parses only the lines whose value changed."""
    found: dict[str, Sample] = {}
    for line in lines:
        if (sample := _kept.get(line)) is not None:
            found[line] = sample
    missing = list(dict.fromkeys(line for line in lines if line not in found))
    if missing:
        parsed = [s for family in text_string_to_metric_families("\n".join(missing) + "\n") for s in family.samples]
        found.update(zip(missing, parsed, strict=True))
        if len(_kept) + len(missing) > KEPT_LINES:
            _kept.clear()
        _kept.update((line, found[line]) for line in missing[:KEPT_LINES] if len(line) <= KEPT_LINE)
    return [found[line] for line in lines]


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
