"""The Prometheus HTTP query API (also Thanos, Mimir, VictoriaMetrics): instant and range queries as POST
forms, a deadline per request and per client (one refresh), a cap on the answer's size, and the server's
`warnings` kept with the result.

Every failure is a PrometheusError whose message is one plain line: the server cannot be reached, refuses
the credentials (401/403), did not answer in time (a hang), ran out of its own time, or rejected the query
(its `errorType` and `error`)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, TypeVar
from urllib.parse import unquote, urlsplit

from pydantic_core import from_json

from gpumem_tui.sources.http import (
    Budget,
    HttpError,
    Timeouts,
    async_client,
    in_words,
    is_timeout,
    read_capped,
    reason_phrase,
)
from gpumem_tui.sources.prometheus.gc_pause import paused_gc
from gpumem_tui.sources.prometheus.query_limits import QUERY_TIMEOUT_S
from gpumem_tui.sources.prometheus.series_checks import MAX_LABEL_CHARS, Skipped, instant, labels
from gpumem_tui.sources.secret_file import SecretError, exposed, read_secret
from gpumem_tui.text import literal, shown_url

MAX_BYTES = 64 * 2**20
"""The largest answer read: a per-GPU query of 8,000 GPUs is about 8 MiB (reference/fleet.md 4.2)."""
R = TypeVar("R")
CONNECT_TIMEOUT_S = 3.0
"""A Prometheus, Thanos or Mimir is often across a network or behind a proxy (TLS counts here); its queries
are allowed 10 s, so 3 s to connect is no wait a user notices, and 1 s failed a loaded machine's loopback."""
READ_ROUNDS = 3
"""A client's whole life (one refresh: all its queries) in requests' deadlines. A read asks in rounds, each
on what the one before answered (first_read.py, reader.py); a server slow enough to fill three is given up."""


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


@dataclass(frozen=True)
class Connection:
    """How to reach the server: its URL as shown (a Mimir prefix such as `/prometheus` included; never a user
    or password: `connect` takes them out), extra headers, a bearer token file, a CA file, and basic auth (a
    user, with a password from a file or from the URL given)."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    bearer_token_file: str | None = None
    ca_file: str | None = None
    username: str | None = None
    password_file: str | None = None
    url_password: str | None = field(default=None, repr=False)
    """The password written in the URL given, kept for the request only."""

    def request_headers(self) -> dict[str, str]:
        """The headers of every request; the token file is read (and checked) now: a SecretError otherwise."""
        headers = {"Accept": "application/json", **dict(self.headers)}
        if self.bearer_token_file is not None:
            headers["Authorization"] = f"Bearer {read_secret(self.bearer_token_file, '--bearer-token-file', True)}"
        return headers

    def basic_auth(self) -> tuple[str, str] | None:
        """(user, password) for basic auth, the password file read now; None without a user."""
        if self.username is None:
            return None
        if self.password_file is not None:
            return self.username, read_secret(self.password_file, "--password-file", False)
        return self.username, self.url_password or ""

    def warnings(self) -> list[str]:
        """A word for each secret file that others may read (said once, as a command starts)."""
        files = (("--bearer-token-file", self.bearer_token_file), ("--password-file", self.password_file))
        return [w for option, path in files if path is not None and (w := exposed(path, option)) is not None]


def connect(
    url: str,
    headers: tuple[tuple[str, str], ...] = (),
    bearer_token_file: str | None = None,
    ca_file: str | None = None,
    username: str | None = None,
    password_file: str | None = None,
) -> Connection:
    """The Connection of the options given (`url` as parse_url checked it): a user and password written in
    the URL are taken out of it into basic auth. One way to authenticate: a ValueError otherwise."""
    parts = urlsplit(url)
    in_url = parts.username is not None or parts.password is not None
    if in_url and (username is not None or password_file is not None):
        raise ValueError("--prometheus: a user in the URL and --username/--password-file: give the user once")
    if password_file is not None and username is None:
        raise ValueError("--password-file needs --username (basic auth is a user and a password)")
    user = unquote(parts.username or "") if in_url else username
    if bearer_token_file is not None and user is not None:
        raise ValueError("--bearer-token-file and basic auth (--username or a user in the URL): give one")
    password = unquote(parts.password) if in_url and parts.password is not None else None
    return Connection(shown_url(url), headers, bearer_token_file, ca_file, user, password_file, password)


def parse_header(text: str) -> tuple[str, str]:
    """`X-Scope-OrgID: team-a` -> ("X-Scope-OrgID", "team-a"); a ValueError in words otherwise. The value
    may be a secret: no error repeats it, nor the text when no name can be told from it."""
    name, colon, value = text.partition(":")
    if not colon or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name.strip()):
        raise ValueError("--header: expected NAME: VALUE (for example 'X-Scope-OrgID: team-a'); not repeated here")
    if not re.fullmatch(r"[\t\x20-\x7e]*", value):
        raise ValueError(
            f"--header {name.strip()}: the value holds a line break, a control character or a character that is "
            "not ASCII (an HTTP header is ASCII text)"
        )
    return name.strip(), value.strip()


def parse_url(text: str) -> str:
    """The server's base URL without a trailing slash; http or https only. Never repeated in an error with
    the user and password it may hold."""
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", text):
        raise ValueError(
            f"--prometheus {shown_url(text)!r}: expected an http:// or https:// URL such as http://prometheus:9090"
        )
    if "@" in urlsplit(text).path:
        raise ValueError("--prometheus: an '@' after the host (a password with a '/' must be percent-encoded)")
    return text.rstrip("/")


def parse_time(text: str) -> float:
    """--at: Unix seconds (`1767225600`) or an RFC 3339 time with its zone (`2026-01-01T00:00:00Z`)."""
    value = _seconds(text)
    if value is None:
        raise ValueError(f"--at {text!r}: expected Unix seconds or an RFC 3339 time such as 2026-01-01T00:00:00Z")
    if not math.isfinite(value) or not 0 <= value <= 253_402_300_799:
        raise ValueError(f"--at {text!r}: not a moment")
    return value


def _seconds(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.timestamp() if moment.tzinfo is not None else None


class PrometheusClient:
    """Queries one server over one connection pool, for one refresh: every request ends within its deadline
    (connection, headers and whole answer), and all of them within `refresh_s` of the first.
    `async with PrometheusClient(conn) as c: await c.query(q, t)`."""

    def __init__(
        self,
        connection: Connection,
        *,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        query_timeout_s: float = QUERY_TIMEOUT_S,
        max_bytes: int = MAX_BYTES,
        connections: int = 8,
        refresh_s: float | None = None,
    ) -> None:
        """`refresh_s`: the most all requests take together, from the first (default READ_ROUNDS deadlines)."""
        self.connection, self.query_timeout_s, self.max_bytes = connection, query_timeout_s, max_bytes
        self.timeouts = Timeouts.of(connect_timeout_s, query_timeout_s + 2.0)
        self.refresh_s = READ_ROUNDS * self.timeouts.deadline_s if refresh_s is None else refresh_s
        try:  # the secret files are read at each client: a token rotated on disk is taken at the next read
            headers, auth = connection.request_headers(), connection.basic_auth()
        except SecretError as exc:
            raise PrometheusError(str(exc), "secret") from None
        self._client = async_client(
            self.timeouts,
            connections=connections,
            headers=headers,
            ca_file=connection.ca_file,
            pool_s=self.timeouts.deadline_s,  # never waited for: `_slots` lets as many requests out as it has
            auth=auth,
            origin=connection.url,
        )
        import asyncio  # here: `fleet check --demo` reads the records of this module, never a server

        self._slots = asyncio.Semaphore(connections)
        """A request waits here for a connection, before its deadline starts: queued behind slow answers is
        no failure of its own (the refresh's deadline bounds the wait)."""
        self._ends_at: float | None = None
        """The event loop's time the refresh's deadline ends at, set by the first request."""
        self._hung: str | None = None
        """Why an earlier request got no answer in time: the requests still queued are not sent to a hung
        server (each would wait its whole deadline again)."""
        self._budget = Budget(2 * max_bytes)  # a read sends 20 queries or more at once

    async def __aenter__(self) -> PrometheusClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.aclose()

    async def query(self, promql: str, at: float) -> Result:
        """An instant query evaluated at `at` (Unix seconds). A series the API would not send is skipped, with a
        note in the warnings (series_checks.py)."""
        status, body, url = await self._post("/api/v1/query", {"query": promql, "time": _number(at)})
        with paused_gc():  # the parsed JSON is freed inside: the collector never goes over it
            return _vector(url, status, body)

    async def query_range(self, promql: str, start: float, end: float, step_s: float) -> RangeResult:
        """A range query; `step_s` as the caller chose it (Prometheus refuses over 11,000 points a series)."""
        form = {"query": promql, "start": _number(start), "end": _number(end), "step": _number(step_s)}
        status, body, url = await self._post("/api/v1/query_range", form)
        with paused_gc():
            return _matrix(url, status, body)

    async def label_values(self, label: str, selector: str, start: float, end: float) -> list[str]:
        """The values `label` takes on the series `selector` matches between `start` and `end`, sorted: the
        label API, an index lookup that reads no samples (a stored block that overlaps the span counts whole,
        so a value may be listed whose series has no sample in it)."""
        params = {"match[]": selector, "start": _number(start), "end": _number(end)}
        status, body, url = await self._request("GET", f"/api/v1/label/{label}/values", params=params)
        return _strings(url, status, body)

    async def _post(self, path: str, form: dict[str, str]) -> tuple[int, bytes, str]:
        form = {**form, "timeout": _number(self.query_timeout_s)}  # seconds; "0.5s" is not a Prometheus duration
        return await self._request("POST", path, data=form)

    async def _request(
        self, method: str, path: str, data: dict[str, str] | None = None, params: dict[str, str] | None = None
    ) -> tuple[int, bytes, str]:
        import asyncio

        url = self.connection.url + path
        loop = asyncio.get_running_loop()
        if self._ends_at is None:
            self._ends_at = loop.time() + self.refresh_s
        try:
            async with asyncio.timeout_at(self._ends_at), self._slots:
                status, body = await self._sent(method, url, data, params)
        except TimeoutError:  # the refresh's deadline; a request's own is a PrometheusError by now
            words = f"the read was not done within {self.refresh_s:g} s (a slow or hung server)"
            raise PrometheusError(f"{url}: {words}", "hang") from None
        return status, body, url

    async def _sent(
        self, method: str, url: str, data: dict[str, str] | None, params: dict[str, str] | None
    ) -> tuple[int, bytes]:
        """One request within its deadline, once a connection is free; every failure a PrometheusError."""
        if self._hung is not None:
            raise PrometheusError(f"{url}: not asked after an earlier query's hang ({self._hung})", "hang")
        deadline = self.timeouts.deadline()
        try:
            async with deadline:
                return await read_capped(
                    self._client, method, url, self.max_bytes, data=data, params=params, budget=self._budget
                )
        except HttpError as exc:
            raise PrometheusError(f"{url}: {exc}", "down") from None
        except Exception as exc:  # noqa: BLE001 - every transport failure is one line and `down` (or a hang)
            if not (deadline.expired() or is_timeout(exc)):
                raise PrometheusError(f"{url}: {in_words(exc, self.timeouts)}", "down") from None
            self._hung = in_words(exc, self.timeouts)
            raise PrometheusError(f"{url}: {self._hung}", "hang") from None


def sorted_answers(
    names: Iterable[str], answers: Iterable[object], kind: type[R]
) -> tuple[dict[str, R], dict[str, str]]:
    """Concurrent queries' answers by name: (the results of type `kind`, each failure in one line). Anything
    else raised is raised again: a bug, never a source that failed."""
    results: dict[str, R] = {}
    failures: dict[str, str] = {}
    for name, answer in zip(names, answers, strict=True):
        if isinstance(answer, kind):
            results[name] = answer
        elif isinstance(answer, PrometheusError):
            failures[name] = str(answer)
        elif isinstance(answer, BaseException):
            raise answer
    return results, failures


def _number(value: float) -> str:
    """Seconds as the API reads them: `1767225600`, `0.5`, `1e-06` (a float, never `0.5s`)."""
    return str(int(value)) if value == int(value) else repr(float(value))


def _envelope(url: str, status: int, body: bytes, kind: str) -> tuple[list[Any], list[str]]:
    """The `result` list of a success, and its `warnings` (strings); a PrometheusError otherwise."""
    answer = _success(url, status, body)
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != kind or not isinstance(data.get("result"), list):
        raise PrometheusError(f"{url}: the answer has no {kind} result", "query")
    warnings = answer.get("warnings") or []
    return data["result"], [_cut(w) for w in warnings] if isinstance(warnings, list) else [_cut(warnings)]


def _cut(text: object) -> str:
    """A warning of the server's, literally and at most 300 characters."""
    said = literal(text)
    return said if len(said) <= 300 else said[:297] + "..."


def _strings(url: str, status: int, body: bytes) -> list[str]:
    """The list of strings a label API answers (its `data`), sorted; a PrometheusError otherwise."""
    data = _success(url, status, body).get("data")
    if not isinstance(data, list):
        raise PrometheusError(f"{url}: the answer has no list of values", "query")
    return sorted(str(value) for value in data)


def _success(url: str, status: int, body: bytes) -> dict[str, Any]:
    """The answer of a request the server carried out; a PrometheusError in one line otherwise."""
    if status in (401, 403):
        raise PrometheusError(
            f"{url}: HTTP {status} {reason_phrase(status)}: check --bearer-token-file or --header", "auth"
        )
    try:
        answer = from_json(body, cache_strings="keys")  # pydantic's parser: labels' names are a few strings
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        words = f"HTTP {status} {reason_phrase(status)}".strip()
        raise PrometheusError(f"{url}: {words}, and the answer is not the query API's JSON", "down")
    if answer.get("status") != "success":
        error_type, error = str(answer.get("errorType", "")), str(answer.get("error", ""))
        kind_of = "timeout" if error_type == "timeout" or status == 503 and "timeout" in error else "query"
        raise PrometheusError(f"{url}: {error_type or f'HTTP {status}'}: {' '.join(error.split())[:300]}", kind_of)
    return answer


def _vector(url: str, status: int, body: bytes) -> Result:
    items, warnings = _envelope(url, status, body, "vector")
    del body  # the parsed answer is all that is kept from here
    skipped = Skipped()
    series = _instants(items, skipped)
    return Result(series, warnings + skipped.notes())


def _matrix(url: str, status: int, body: bytes) -> RangeResult:
    items, warnings = _envelope(url, status, body, "matrix")
    skipped = Skipped()
    series = [ranged for item in items if (ranged := _ranged(item, skipped)) is not None]
    return RangeResult(_unique(series, skipped), warnings + skipped.notes())


def _instants(items: list[Any], skipped: Skipped) -> list[Series]:
    """Every series of a vector answer that is one as the API documents it. At 1,000 nodes a refresh reads about
    10^4: the whole answer is checked at once where it is as the API sends it (labels strings none too long, no
    two series alike, values `[time, "number"]`); anything else is read item by item (series_checks.py)."""
    try:
        metrics = [item["metric"] for item in items]
        joined = list(map("".join, map(dict.values, metrics)))  # TypeError: a label that is not a string
        pairs = [item["value"] for item in items]
        stamps, readings = zip(*pairs, strict=True) if pairs else ((), ())
        "".join(readings)  # TypeError: a value that is not a string
        math.fsum(stamps)  # TypeError: a time that is not a number
        if max(map(len, joined), default=0) > MAX_LABEL_CHARS or len(
            set(map(frozenset, map(dict.items, metrics)))
        ) < len(metrics):
            raise ValueError("a long label or a series twice: read one by one")
        values = list(map(float, readings))
        if not math.isfinite(math.fsum(stamps)) or math.inf in values or -math.inf in values:
            raise ValueError("an infinity: told from a number past a float's range one by one")
        return list(map(Series, metrics, values, map(float, stamps)))
    except (KeyError, TypeError, ValueError, IndexError, OverflowError):
        pass
    read = (_instant(item, skipped) for item in items)
    return _unique([s for s in read if s is not None], skipped)


def _instant(item: Any, skipped: Skipped) -> Series | None:
    found = labels(item, skipped)
    if found is None:
        return None
    read = instant(item.get("value"))
    if isinstance(read, str):
        skipped.add(read, item)
        return None
    return Series(found, *read)


def _ranged(item: Any, skipped: Skipped) -> RangeSeries | None:
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
    return RangeSeries(found, [(at, value) for value, at in points])


SeriesLike = TypeVar("SeriesLike", Series, RangeSeries)


def _unique(series: list[SeriesLike], skipped: Skipped) -> list[SeriesLike]:
    """The series whose labels no earlier one has (a proxy that repeats an answer's series); the rest counted."""
    seen: set[frozenset[tuple[str, str]]] = set()
    kept = []
    for s in series:
        key = frozenset(s.labels.items())
        if key in seen:
            skipped.add("the labels of an earlier series", {"metric": s.labels})
            continue
        seen.add(key)
        kept.append(s)
    return kept
