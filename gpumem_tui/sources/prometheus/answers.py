"""A query API answer read as it streams, and the records of what it holds: the series of a vector or a matrix
with the server's warnings, or a PrometheusError in one line. Every series is checked as the API documents it
(series_checks.py): one that is not is skipped with a note, never the whole answer lost.

Memory: no answer is held whole (answer_stream.py), only its series, each label name and value one object
with every other of the refresh: about 0.4 KB a series of 6 labels (docs/design/queries.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat
from typing import Any, NamedTuple, cast

from gpumem_tui.sources.http import Sink, reason_phrase
from gpumem_tui.sources.prometheus.answer_stream import AnswerStream, NotJson
from gpumem_tui.sources.prometheus.gc_pause import paused_gc
from gpumem_tui.sources.prometheus.label_memo import Memo
from gpumem_tui.sources.prometheus.series_checks import Skipped, finite_run, instant, interned, labels, plain_labels
from gpumem_tui.text import literal

FAILED = {
    "down": "Prometheus cannot be reached",
    "auth": "Prometheus refused the credentials",
    "timeout": "Prometheus ran out of time",
    "hang": "Prometheus did not answer in time",
    "query": "Prometheus rejected a query",
    "secret": "the credentials cannot be read",
}
"""What each kind of PrometheusError means, first in every message that reports one."""


class PrometheusError(Exception):
    """A query that gave no result, in one line. `kind`: `down` (no answer), `auth` (401/403), `hang` (no
    complete answer within the client's deadline), `timeout` (the server's own), `query` (the server rejected
    the query: a bug or a bad --selector), `secret` (a token or password file that cannot be read or used,
    named without its text)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind

    def said(self) -> str:
        """The error as the commands and the fleet screen say it: what went wrong, then the detail."""
        return f"{FAILED.get(self.kind, 'Prometheus failed')}: {self}"


class Series(NamedTuple):
    """One series of a result: its labels and its value (NaN stays NaN: the caller says it is unknown). A
    tuple: a read of 1,000 nodes makes about 10^4 of them."""

    labels: dict[str, str]
    value: float
    timestamp: float


_NEW_SERIES = partial(tuple.__new__, Series)


def made(labels: Iterable[dict[str, str]], values: Iterable[float], stamps: Iterable[float]) -> list[Series]:
    """The series of these columns, made without a Python call each (a NamedTuple's `__new__` is one: 1.2 us a
    series here, half of it)."""
    return cast(list[Series], list(map(_NEW_SERIES, zip(labels, values, stamps, strict=True))))


@dataclass(frozen=True)
class RangeSeries:
    labels: dict[str, str]
    points: list[tuple[float, float]]


@dataclass
class Result:
    """What one query returned, with the server's warnings (a partial answer from Thanos says so there)."""

    series: list[Series] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class RangeResult:
    series: list[RangeSeries] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def refused(url: str, status: int) -> None:
    """A PrometheusError where the server refused the credentials."""
    if status in (401, 403):
        raise PrometheusError(
            f"{url}: HTTP {status} {reason_phrase(status)}: check --bearer-token-file or --header", "auth"
        )


def not_json(url: str, status: int) -> PrometheusError:
    words = f"HTTP {status} {reason_phrase(status)}".strip()
    return PrometheusError(f"{url}: {words}, and the answer is not the query API's JSON", "down")


def succeeded(url: str, status: int, answer: dict[str, Any]) -> None:
    """A PrometheusError in one line where the answer's `status` is no success: the server's own words."""
    if answer.get("status") != "success":
        error_type, error = str(answer.get("errorType", "")), str(answer.get("error", ""))
        kind_of = "timeout" if error_type == "timeout" or status == 503 and "timeout" in error else "query"
        raise PrometheusError(f"{url}: {error_type or f'HTTP {status}'}: {' '.join(error.split())[:300]}", kind_of)


def _cut(text: object) -> str:
    """A warning of the server's, literally and at most 300 characters."""
    said = literal(text)
    return said if len(said) <= 300 else said[:297] + "..."


class Answer:
    """One query's answer as it streams: `sink` is the request's, then `vector()` or `matrix()` as `kind`
    says; `release()` at the end, read or not (a parse left halfway holds its text). `strings`: the refresh's
    label names and values, one object each; `memo`: the query's label sets as its last read made them, where
    the caller keeps them (a vector's)."""

    def __init__(self, url: str, kind: str, strings: dict[str, str], memo: Memo | None = None) -> None:
        self.url, self.kind = url, kind
        self.status = 0
        self.memo = memo
        self.kept = _Kept(kind, strings)
        quick = None if memo is None or kind != "vector" else partial(self.kept.quick, memo)
        self.stream = AnswerStream(self.kept.take, quick)

    def sink(self, status: int) -> Sink:
        self.status = status
        refused(self.url, status)
        return self._feed

    def vector(self) -> Result:
        warnings = self._close()
        if self.memo is not None:
            self.memo.done()
        return Result(self.kept.series, warnings + self.kept.skipped.notes())

    def matrix(self) -> RangeResult:
        warnings = self._close()
        return RangeResult(self.kept.series, warnings + self.kept.skipped.notes())

    def release(self) -> None:
        self.stream.release()

    def _feed(self, piece: bytes) -> None:
        with paused_gc():  # an answer makes 10^5 objects, none cyclic: the collector never goes over them
            try:
                self.stream.feed(piece)
            except NotJson:
                raise not_json(self.url, self.status) from None

    def _close(self) -> list[str]:
        """The answer's warnings, once it is read whole; a PrometheusError where it is no success of `kind`."""
        with paused_gc():
            try:
                self.stream.close()
            except NotJson:
                raise not_json(self.url, self.status) from None
        succeeded(self.url, self.status, self.stream.top)
        if not self.stream.streamed or self.stream.data.get("resultType") != self.kind:
            raise PrometheusError(f"{self.url}: the answer has no {self.kind} result", "query")
        warnings = self.stream.top.get("warnings") or []
        return [_cut(w) for w in warnings] if isinstance(warnings, list) else [_cut(warnings)]


class _Kept:
    """The series made of an answer's items as they come, and those skipped."""

    def __init__(self, kind: str, strings: dict[str, str]) -> None:
        self.kind, self.strings = kind, strings
        self.skipped = Skipped()
        self.series: list[Any] = []
        self.seen: dict[int, int] = {}
        """Each kept series' index by the hash of its labels: a later one alike is skipped."""

    def take(self, items: list[Any]) -> None:
        if self.kind == "vector":
            found: list[Any] = _instants(items, self.skipped, self.strings)
        else:
            found = [ranged for item in items if (ranged := _ranged(item, self.skipped, self.strings)) is not None]
        self._keep([hash(frozenset(s.labels.items())) for s in found], found)

    def quick(self, memo: Memo, text: str, start: int, end: int) -> bool:
        """The items of `text[start:end]` read by `memo` where it can (label_memo.py): whether it did."""
        read = memo.items(text, start, end, self.strings)
        if read is None:
            return False
        keys, labels, values, stamps = read
        self._keep(keys, made(labels, values, stamps))
        return True

    def _keep(self, keys: list[int], found: list[Any]) -> None:
        """`found` kept but for a series whose labels an earlier one has (`keys`: each one's labels' hash)."""
        if len(set(keys)) == len(keys) and self.seen.keys().isdisjoint(keys):
            self.seen.update(zip(keys, range(len(self.series), len(self.series) + len(found)), strict=True))
            self.series.extend(found)
            return
        for key, s in zip(keys, found, strict=True):
            earlier = self.seen.get(key)
            if earlier is not None and self.series[earlier].labels == s.labels:
                self.skipped.add("the labels of an earlier series", {"metric": s.labels})
                continue
            self.seen.setdefault(key, len(self.series))
            self.series.append(s)


def read_vector(url: str, status: int, body: bytes) -> Result:
    """The answer `body` read as a query's is (tests'; a query streams its answer)."""
    answer = Answer(url, "vector", {})
    try:
        answer.sink(status)(body)
        return answer.vector()
    finally:
        answer.release()


def _instants(items: list[Any], skipped: Skipped, strings: dict[str, str]) -> list[Series]:
    """Every series of these items of a vector answer that is one as the API documents it. At 1,000 nodes a
    refresh reads about 10^4: the items are checked at once where they are as the API sends them (labels strings
    none too long, values `[time, "number"]`); anything else is read item by item (series_checks.py)."""
    try:
        metrics = [item["metric"] for item in items]
        pairs = [item["value"] for item in items]
        stamps, readings = zip(*pairs, strict=True) if pairs else ((), ())
        "".join(readings)  # TypeError: a value that is not a string
        if not plain_labels(metrics):
            raise ValueError("a label no string, or a long one: read one by one")
        values = list(map(float, readings))
        if not finite_run(values, stamps):  # TypeError: a time that is not a number
            raise ValueError("an infinity: told from a number past a float's range one by one")
        return made(map(interned, metrics, repeat(strings)), values, map(float, stamps))
    except (KeyError, TypeError, ValueError, IndexError, OverflowError):
        pass
    read = (_instant(item, skipped, strings) for item in items)
    return [s for s in read if s is not None]


def _instant(item: Any, skipped: Skipped, strings: dict[str, str]) -> Series | None:
    found = labels(item, skipped)
    if found is None:
        return None
    read = instant(item.get("value"))
    if isinstance(read, str):
        skipped.add(read, item)
        return None
    return Series(interned(found, strings), *read)


def _ranged(item: Any, skipped: Skipped, strings: dict[str, str]) -> RangeSeries | None:
    found = labels(item, skipped)
    if found is None:
        return None
    values = item.get("values")
    if not isinstance(values, list):
        skipped.add("no list of values", item)
        return None
    points = [read for pair in values if not isinstance(read := instant(pair), str)]
    if len(points) < len(values):
        skipped.add('a point that is not [time, "number"] (the point left out)', item)
    return RangeSeries(interned(found, strings), [(at, value) for value, at in points])
