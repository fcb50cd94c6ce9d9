"""The Prometheus HTTP query API (also Thanos, Mimir, VictoriaMetrics): instant and range queries as POST
forms, a deadline per request and per client (one refresh), a cap on the answer's size, and the server's
`warnings` kept with the result.

Every failure is a PrometheusError whose message is one plain line: the server cannot be reached, refuses
the credentials (401/403), did not answer in time (a hang), ran out of its own time, or rejected the query
(its `errorType` and `error`). Each answer is read as it streams, never held whole (answers.py)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit

from pydantic_core import from_json

from gpumem_tui.sources.http import (
    Budget,
    HttpError,
    Sink,
    Timeouts,
    async_client,
    in_words,
    is_timeout,
    stream_capped,
)
from gpumem_tui.sources.prometheus.answers import (  # the records and the error, where their users import them
    Answer,
    PrometheusError,
    RangeResult,
    RangeSeries,
    Result,
    Series,
    not_json,
    refused,
    succeeded,
)

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "CONNECT_TIMEOUT_S",
    "MAX_BYTES",
    "READ_ROUNDS",
    "Connection",
    "PrometheusClient",
    "PrometheusError",
    "RangeResult",
    "RangeSeries",
    "Result",
    "Series",
    "connect",
    "parse_header",
    "parse_time",
    "parse_url",
    "sorted_answers",
]
from gpumem_tui.sources.prometheus.label_memo import LabelMemo
from gpumem_tui.sources.prometheus.query_limits import QUERY_TIMEOUT_S
from gpumem_tui.sources.secret_file import SecretError, exposed, read_secret
from gpumem_tui.text import shown_url

MAX_BYTES = 64 * 2**20
"""The largest answer read: a per-GPU query of 8,000 GPUs is about 8 MiB (reference/fleet.md 4.2)."""
R = TypeVar("R")
CONNECT_TIMEOUT_S = 3.0
"""A Prometheus, Thanos or Mimir is often across a network or behind a proxy (TLS counts here); its queries
are allowed 10 s, so 3 s to connect is no wait a user notices, and 1 s failed a loaded machine's loopback."""
READ_ROUNDS = 3
"""A client's whole life (one refresh: all its queries) in requests' deadlines. A read asks in rounds, each
on what the one before answered (first_read.py, reader.py); a server slow enough to fill three is given up."""
GIVEN_BACK_S = 0.05
"""Parsing time is given back to the requests in flight once this much has added up: less is no matter to a
deadline of seconds, and giving it back at every piece cost 0.15 ms a query (bench/request_deadline.py)."""


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
        self._strings: dict[str, str] = {}
        """Every label name and value read in this refresh, one object each: a node's name or a model's is in
        thousands of series, across queries."""
        self._labels: LabelMemo | None = None
        """The label sets of each query's last read, where a reader that reads again gave them (`remember`)."""
        self._in_flight: set[asyncio.Timeout] = set()
        """The deadlines of the requests being read: each is moved on by the time answers are parsed meanwhile."""
        self._owed = 0.0
        """Parsing time not given back yet: given in steps of GIVEN_BACK_S (a reschedule costs a timer each)."""

    async def __aenter__(self) -> PrometheusClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.aclose()

    def remember(self, labels: LabelMemo) -> None:
        """Each query's label sets read with `labels`, which keeps them from this refresh to the next."""
        self._labels = labels

    async def query(self, promql: str, at: float) -> Result:
        """An instant query evaluated at `at` (Unix seconds). A series the API would not send is skipped, with a
        note in the warnings (series_checks.py)."""
        memo = None if self._labels is None else self._labels.of(promql)  # None: read as ever
        answer = Answer(self.connection.url + "/api/v1/query", "vector", self._strings, memo)
        try:
            await self._post(answer, {"query": promql, "time": _number(at)})
            return answer.vector()
        finally:
            answer.release()

    async def query_range(self, promql: str, start: float, end: float, step_s: float) -> RangeResult:
        """A range query; `step_s` as the caller chose it (Prometheus refuses over 11,000 points a series)."""
        answer = Answer(self.connection.url + "/api/v1/query_range", "matrix", self._strings)
        form = {"query": promql, "start": _number(start), "end": _number(end), "step": _number(step_s)}
        try:
            await self._post(answer, form)
            return answer.matrix()
        finally:
            answer.release()

    async def label_values(self, label: str, selector: str, start: float, end: float) -> list[str]:
        """The values `label` takes on the series `selector` matches between `start` and `end`, sorted: the
        label API, an index lookup that reads no samples (a stored block that overlaps the span counts whole,
        so a value may be listed whose series has no sample in it)."""
        url = f"{self.connection.url}/api/v1/label/{label}/values"
        whole = _Whole()
        params = {"match[]": selector, "start": _number(start), "end": _number(end)}
        await self._request("GET", url, whole.sink, params=params)
        return _strings(url, whole.status, bytes(whole.body))

    async def _post(self, answer: Answer, form: dict[str, str]) -> None:
        form = {**form, "timeout": _number(self.query_timeout_s)}  # seconds; "0.5s" is not a Prometheus duration
        await self._request("POST", answer.url, answer.sink, data=form)

    async def _request(
        self,
        method: str,
        url: str,
        sink_of: Callable[[int], Sink],
        data: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
    ) -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        if self._ends_at is None:
            self._ends_at = loop.time() + self.refresh_s
        try:
            async with asyncio.timeout_at(self._ends_at), self._slots:
                await self._sent(method, url, sink_of, data, params)
        except TimeoutError:  # the refresh's deadline; a request's own is a PrometheusError by now
            words = f"the read was not done within {self.refresh_s:g} s (a slow or hung server)"
            raise PrometheusError(f"{url}: {words}", "hang") from None

    async def _sent(
        self,
        method: str,
        url: str,
        sink_of: Callable[[int], Sink],
        data: dict[str, str] | None,
        params: dict[str, str] | None,
    ) -> None:
        """One request within its deadline, once a connection is free, its body handed to `sink_of(status)`'s
        sink as it comes; every failure a PrometheusError."""
        if self._hung is not None:
            raise PrometheusError(f"{url}: not asked after an earlier query's hang ({self._hung})", "hang")
        deadline = self.timeouts.deadline()
        try:
            async with deadline:
                self._in_flight.add(deadline)
                timed = self._timed(sink_of)
                await stream_capped(
                    self._client, method, url, self.max_bytes, timed, data=data, params=params, budget=self._budget
                )
        except PrometheusError:  # the answer's own (read as it came): said already
            raise
        except HttpError as exc:
            raise PrometheusError(f"{url}: {exc}", "down") from None
        except Exception as exc:  # noqa: BLE001 - every transport failure is one line and `down` (or a hang)
            if not (deadline.expired() or is_timeout(exc)):
                raise PrometheusError(f"{url}: {in_words(exc, self.timeouts)}", "down") from None
            self._hung = in_words(exc, self.timeouts)
            raise PrometheusError(f"{url}: {self._hung}", "hang") from None
        finally:
            self._in_flight.discard(deadline)

    def _timed(self, sink_of: Callable[[int], Sink]) -> Callable[[int], Sink]:
        """`sink_of` whose sinks give the time they take back to every request in flight: an answer is parsed
        as it comes, on the one thread every read shares, and the time this process spends parsing is no wait
        on the server (at 200,000 series, 8 answers parsed at once took longer than a request's deadline)."""
        import asyncio

        def timed_of(status: int) -> Sink:
            sink, clock = sink_of(status), asyncio.get_running_loop().time

            def take(piece: bytes) -> None:
                began = clock()
                sink(piece)
                self._owed += clock() - began
                if self._owed >= GIVEN_BACK_S:
                    for deadline in self._in_flight:
                        if (when := deadline.when()) is not None:
                            deadline.reschedule(when + self._owed)
                    self._owed = 0.0

            return take

        return timed_of


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


def _success(url: str, status: int, body: bytes) -> dict[str, Any]:
    """The answer of a request the server carried out; a PrometheusError in one line otherwise."""
    refused(url, status)
    try:
        answer = from_json(body, cache_strings="keys")  # pydantic's parser: labels' names are a few strings
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise not_json(url, status)
    succeeded(url, status, answer)
    return answer


def _strings(url: str, status: int, body: bytes) -> list[str]:
    """The list of strings a label API answers (its `data`), sorted; a PrometheusError otherwise."""
    data = _success(url, status, body).get("data")
    if not isinstance(data, list):
        raise PrometheusError(f"{url}: the answer has no list of values", "query")
    return sorted(str(value) for value in data)


class _Whole:
    """A body kept whole as it is read, with its status (the label API's: a list of names)."""

    def __init__(self) -> None:
        self.status = 0
        self.body = bytearray()

    def sink(self, status: int) -> Sink:
        self.status = status
        return self.body.extend
