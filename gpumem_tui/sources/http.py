"""The only module that imports httpx: building clients, reading a capped body, and failures in words.

The engine scraper and the Prometheus client both build their `AsyncClient` here, so timeouts, TLS,
redirects and proxies are decided once. httpx is imported inside the functions, not at module level, and
without its optional command-line tool (`_httpx`): it pulls in rich, click and pygments wherever click is
installed, and the core must not load rich (tests/test_import_rules.py).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio
    import ssl


MAX_CA_BYTES = 16 * 2**20
"""The largest --ca-file read: a system's whole bundle of certificates is about 0.2 MiB."""


class HttpError(Exception):
    """An answer that cannot be used (an HTTP error status, a body over the limit), in words."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Timeouts:
    """Per-phase limits of one request, in seconds. httpx's limits are per phase and per read (a body sent a
    byte at a time never trips them); `deadline()` bounds the whole request."""

    connect_s: float = 1.0
    read_s: float = 2.0
    deadline_s: float = 4.0
    """The whole request, connection and body together: a trickling body cannot outlive it."""

    @classmethod
    def of(cls, connect_s: float, read_s: float, deadline_s: float | None = None) -> Timeouts:
        """The limits with the rule every client of this module keeps: a request may take its connect and read
        limits and 1 s more in all, unless `deadline_s` says."""
        return cls(connect_s, read_s, connect_s + read_s + 1.0 if deadline_s is None else deadline_s)

    def deadline(self) -> asyncio.Timeout:
        """`async with timeouts.deadline(): ...`: TimeoutError once `deadline_s` has passed, however the
        answer trickles (`expired()` says whether this limit, and not an outer one, ended it)."""
        import asyncio

        return asyncio.timeout(self.deadline_s)


def async_client(
    timeouts: Timeouts,
    *,
    connections: int,
    headers: Mapping[str, str],
    ca_file: str | None = None,
    pool_s: float | None = None,
    auth: tuple[str, str] | None = None,
    origin: str | None = None,
) -> Any:
    """An `httpx.AsyncClient` with per-phase timeouts, at most `connections` connections, up to 5 redirects,
    no proxy or netrc from the environment, and the system's certificates (or `ca_file`'s). `pool_s`: how long a
    request waits for a free connection (default: the connect timeout). `auth`: basic auth (user, password).
    `origin`: the URL whose origin alone is sent `headers` (but Accept) and the credentials: a redirect to
    another origin goes without them (httpx drops only Authorization, and keeps it from http to https)."""
    httpx = _httpx()
    _sniffio_known_absent()
    pool = timeouts.connect_s if pool_s is None else pool_s
    private = [name for name in headers if name.lower() != "accept"]
    hooks = {"request": [_origin_only(httpx.URL(origin), private)]} if origin is not None else {}
    return httpx.AsyncClient(
        timeout=httpx.Timeout(connect=timeouts.connect_s, read=timeouts.read_s, write=timeouts.read_s, pool=pool),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        follow_redirects=True,
        max_redirects=5,
        trust_env=False,
        verify=tls(ca_file),
        headers={"Accept-Encoding": "gzip", **headers},  # the one encoding `read_request` inflates with a limit
        auth=auth,
        event_hooks=hooks,
    )


def _origin_only(home: Any, private: list[str]) -> Any:
    """A request hook (httpx calls it before every request sent, a redirect's included) that takes the
    private headers and Authorization out of a request to another origin than `home`'s."""
    names = [*private, "Authorization"]

    async def hook(request: Any) -> None:
        url = request.url
        if (url.scheme, url.host, url.port) != (home.scheme, home.host, home.port):  # httpx: port None = default
            for name in names:
                request.headers.pop(name, None)

    return hook


def prepare() -> None:
    """What a first client needs that takes a while: httpx and its transport imported. A scraper does it once
    in a thread, so the event loop (the app's screen) goes on meanwhile. (The system's certificates are loaded
    at the first TLS connection, off the loop too: sources/tls.py.)"""
    import httpcore  # noqa: F401 - httpx imports it with its first client's transport

    _httpx()

    with contextlib.suppress(ImportError):  # httpcore's first lock loads anyio's asyncio backend (where it is)
        importlib.import_module("anyio._backends._asyncio")


def _httpx() -> Any:
    """httpx, imported without its command-line tool: where click is installed, `import httpx` loads the tool
    and with it click, rich and pygments (35 ms more CPU). click is hidden for the first import (None in
    `sys.modules`: httpx then takes the tool as not installed) and shown again after it."""
    hide = "click" not in sys.modules and "httpx" not in sys.modules
    if hide:
        sys.modules["click"] = None  # type: ignore[assignment]
    try:
        import httpx
    finally:
        if hide and sys.modules.get("click", False) is None:
            del sys.modules["click"]
    return httpx


@functools.cache
def _sniffio_known_absent() -> None:
    """httpcore imports sniffio at every request to learn which event loop runs it, and takes asyncio when the
    import fails; anyio 4 no longer brings sniffio, and each failed import searched the whole path again (a
    tenth of a demo sample's CPU). Where it is not installed, `sys.modules` says so once (None: the import
    fails at once), and every request takes asyncio as before."""
    import importlib.util

    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


def tls(ca_file: str | None = None) -> ssl.SSLContext:
    """One TLS context per certificate file. A file given is read now, so a bad one is bad input at once (a
    SecretError or an ssl.SSLError, neither repeating what it holds); the system's certificates are loaded
    at the first TLS connection (`tls.OnFirstHandshake`)."""
    return _tls(ca_file)


@functools.cache
def _tls(ca_file: str | None) -> ssl.SSLContext:
    # one key for `tls()` and `tls(None)`; ssl is imported with the first client
    if ca_file is None:
        from gpumem_tui.sources.tls import OnFirstHandshake

        return OnFirstHandshake()
    import ssl

    from gpumem_tui.sources.secret_file import read_file

    held = read_file(ca_file, "--ca-file", MAX_CA_BYTES)  # a regular file, bounded: never /dev/zero
    # PEM as OpenSSL reads a file of it: the text between certificates (a bundle's UTF-8 comments) passed over
    return ssl.create_default_context(cadata=held.decode("ascii", "ignore") if b"-----BEGIN" in held else held)


@dataclass
class Budget:
    """The bytes that the bodies one client is reading at once may hold together: a read sends its queries
    concurrently, and each one's own limit times their number is gigabytes where every answer is hostile."""

    most: int
    held: int = 0


Sink = Callable[[bytes], None]
"""Takes each piece of a body as it is read (`stream_capped`)."""


async def read_capped(
    client: Any,
    method: str,
    url: str,
    max_bytes: int,
    data: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    budget: Budget | None = None,
) -> tuple[int, bytes]:
    """The status and body of one request (`data`: a form body, `params`: the URL's query), reading no more
    than `max_bytes` of the body, nor past `budget` with the others in flight (an HttpError beyond). The caller
    decides what an error status means (Prometheus puts its reason in the body)."""
    request = client.build_request(method, url, data=data, params=params)
    return await read_request(client, request, max_bytes, budget)


async def stream_capped(
    client: Any,
    method: str,
    url: str,
    max_bytes: int,
    sink_of: Callable[[int], Sink],
    data: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    budget: Budget | None = None,
) -> int:
    """`read_capped` for a body read as it comes: each piece handed to `sink_of(status)` (called once the
    headers are in) and held nowhere here, so a large answer is never in memory whole. Returns the status."""
    request = client.build_request(method, url, data=data, params=params)
    return await stream_request(client, request, max_bytes, sink_of, budget)


async def read_request(client: Any, request: Any, max_bytes: int, budget: Budget | None = None) -> tuple[int, bytes]:
    """`read_capped` for a request the client built before: httpx sends a request as it is and changes nothing
    in it, so one built once may be sent again (`client.stream` is a build and this)."""
    body = bytearray()
    try:
        status = await stream_request(client, request, max_bytes, lambda _status: body.extend, budget)
        return status, bytes(body)  # a copy for a moment: the callers take bytes
    except BaseException:
        body.clear()  # now: the traceback keeps this frame, and with it the body, as long as the error is kept
        raise


async def stream_request(
    client: Any, request: Any, max_bytes: int, sink_of: Callable[[int], Sink], budget: Budget | None = None
) -> int:
    """`stream_capped` for a request built before. The body is counted as it streams, inflated here with a
    limit (`_inflater`): no piece past the limit, nor past `budget` with the others in flight, reaches the sink
    (an HttpError instead). What was read counts against `budget` until the request ends."""
    response = await client.send(request, stream=True)
    counter = _Counter(max_bytes, budget or Budget(max_bytes))
    try:
        declared = response.headers.get("content-length")
        inflate = _inflater(response.headers.get("content-encoding", ""))
        if declared and declared.isdigit() and int(declared) > max_bytes:
            raise HttpError(f"payload of {int(declared):,} bytes is over the {max_bytes:,}-byte limit: not read")
        sink = sink_of(response.status_code)
        async for raw in response.aiter_raw():  # as sent: chunked or compressed alike
            sink(counter.counted(inflate(raw, counter.room() + 1)))  # one byte over says "over"; 0 would be all
        sink(counter.counted(inflate(b"", 0)))
        return response.status_code
    finally:
        counter.budget.held -= counter.read
        await response.aclose()


@dataclass
class _Counter:
    """The bytes one body has given so far, against its own limit and the budget shared with the others."""

    max_bytes: int
    budget: Budget
    read: int = 0

    def room(self) -> int:
        """The most this body may still give (others may have spent the budget)."""
        return max(min(self.max_bytes - self.read, self.budget.most - self.budget.held), 0)

    def counted(self, piece: bytes) -> bytes:
        """`piece`, counted; an HttpError where it goes past either limit."""
        self.read += len(piece)
        self.budget.held += len(piece)
        if self.read > self.max_bytes or self.budget.held > self.budget.most:
            del piece  # a caller may keep the error, and with its traceback this frame: never the piece with it
            if self.read > self.max_bytes:
                raise HttpError(f"payload is over the {self.max_bytes:,}-byte limit: not read further")
            raise HttpError(
                f"the answers read at once are over their {self.budget.most:,}-byte limit together: not read further"
            )
        return piece


def _inflater(encoding: str) -> Callable[[bytes, int], bytes]:
    """`inflate(raw, most)`: up to `most` bytes of the body `raw` continues, as the answer's Content-Encoding
    says to decode it (`inflate(b"", 0)`: the rest at its end); none but gzip and deflate are asked for
    (`async_client`). A compressed answer is inflated a chunk at a time with a limit, so a small answer that
    inflates to gigabytes is refused at the limit (docs/design/queries.md)."""
    name = encoding.strip().lower()
    if name in ("", "identity"):
        return lambda raw, _most: raw
    if name not in ("gzip", "x-gzip", "deflate"):
        raise HttpError(f"an answer in the {encoding[:40]!r} encoding: not read (gzip or none is asked for)")
    decoder = zlib.decompressobj(zlib.MAX_WBITS | (16 if "gzip" in name else 0))

    def inflate(raw: bytes, most: int) -> bytes:
        try:
            return decoder.decompress(raw, most) if most else decoder.flush()
        except zlib.error as exc:
            raise HttpError(f"the {name} answer does not inflate ({exc})") from None

    return inflate


def reason_phrase(status: int) -> str:
    """`Unauthorized` for 401: the words of a status code."""
    httpx = _httpx()

    try:
        return httpx.codes.get_reason_phrase(status)
    except ValueError:
        return ""


def is_timeout(exc: BaseException) -> bool:
    """Whether a failure ran out of time (connecting, reading, or the whole deadline)."""
    httpx = _httpx()

    return isinstance(exc, TimeoutError | httpx.TimeoutException)


def in_words(exc: BaseException, timeouts: Timeouts) -> str:
    """A failure as one plain sentence for the screen."""
    httpx = _httpx()

    if isinstance(exc, HttpError):
        return str(exc)
    if isinstance(exc, httpx.ConnectTimeout):
        return f"no connection within {timeouts.connect_s:g} s"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect ({_reason(exc)})"
    if isinstance(exc, httpx.ReadTimeout):
        return f"connected but no answer within {timeouts.read_s:g} s"
    if isinstance(exc, httpx.PoolTimeout):
        return "no free connection to this endpoint (its earlier requests are still out)"
    if isinstance(exc, TimeoutError):
        return f"no complete answer within {timeouts.deadline_s:g} s (a stalled or trickling body?)"
    if isinstance(exc, httpx.TooManyRedirects):
        return "too many redirects (a redirect loop?)"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"connection broke mid-answer ({_reason(exc)})"
    if isinstance(exc, httpx.HTTPError | OSError):
        return f"{type(exc).__name__}: {_reason(exc)}"
    return f"unexpected {type(exc).__name__}: {_reason(exc)}"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, _httpx().LocalProtocolError):  # its words repeat what is wrong: a header's value, a secret
        return "a header or the URL is not valid HTTP; not sent"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."
