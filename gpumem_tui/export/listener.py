"""The exporter's HTTP listener: the stdlib's WSGI server, bounded for a port any local user can reach. The
address is resolved once, as it is bound; at most `connections` are served at once, each in its own thread;
one that has not sent its request in `request_s` (or is not answered in `answer_s`) is closed; at the cap, a
new connection closes the oldest one still sending its request, so clients that hold connections cannot keep
a scrape out. docs/design/exporter.md says why these bounds."""

from __future__ import annotations

import contextlib
import errno
import io
import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from gpumem_tui.export.limits import Limits


@dataclass(frozen=True)
class Address:
    """Where the server binds: getaddrinfo's first answer for the host, asked as a server asks it."""

    family: socket.AddressFamily
    sockaddr: tuple[Any, ...]

    @property
    def host(self) -> str:
        return str(self.sockaddr[0])

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.host.split("%")[0]).is_loopback


def resolve(host: str, port: int) -> Address:
    """The address `host:port` is bound at (AI_PASSIVE: `*` is every interface). Raises socket.gaierror or
    UnicodeError for a name that does not resolve."""
    family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    return Address(family, sockaddr)


class _Sink(io.StringIO):
    def write(self, _text: str) -> int:
        return 0


class _Handler(WSGIRequestHandler):
    """A request: its connection is marked answered once its request is in; nothing is logged (a client's
    abuse does not reach the exporter's stderr)."""

    server: BoundedServer

    def parse_request(self) -> bool:
        """Reads the headers; then the request is in, bad or not."""
        parsed = super().parse_request()
        self.server.sent(self.connection)
        return parsed

    def get_stderr(self) -> io.StringIO:
        return _Sink()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        """Nothing: a scrape is not an event."""


@dataclass
class _Open:
    started: float
    sending: bool = True
    """Its request is not in yet."""


class BoundedServer(WSGIServer):
    """WSGIServer with a thread per connection up to `limits.connections`, time limits, and a real backlog."""

    def __init__(self, address: Address, app: Callable[..., Any], limits: Limits):
        self.address_family, self.request_queue_size, self.limits = address.family, limits.backlog, limits
        self.slots = threading.BoundedSemaphore(limits.connections)
        self.open: dict[socket.socket, _Open] = {}
        self.lock = threading.Lock()
        self.closing = False
        super().__init__(address.sockaddr, _Handler)
        self.set_app(app)

    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            return super().get_request()
        except OSError as exc:  # out of descriptors: wait, rather than spin on a listen socket still readable
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                time.sleep(self.limits.poll_s)
            raise

    def process_request(self, request: socket.socket, client_address: Any) -> None:  # type: ignore[override]
        if not self._slot():
            self.shutdown_request(request)
            return
        request.settimeout(self.limits.request_s)
        with self.lock:
            self.open[request] = _Open(time.monotonic())
        threading.Thread(target=self._serve, args=(request, client_address), daemon=True).start()

    def _slot(self) -> bool:
        """Waits for a free slot, closing the oldest connection still sending its request when there is none;
        False when the server closes meanwhile."""
        if self.slots.acquire(blocking=False):
            return True
        self._evict_oldest_sending()
        while not self.slots.acquire(timeout=self.limits.poll_s):
            self._evict_oldest_sending()
            self.service_actions()
            if self.closing:
                return False
        return True

    def _serve(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001, S110 - a client that hung up or ran out of time: nothing to say
            pass
        finally:
            with self.lock:
                self.open.pop(request, None)
            self.shutdown_request(request)
            self.slots.release()

    def sent(self, request: socket.socket) -> None:
        """The connection's request is in: it is being answered."""
        with self.lock:
            if request in self.open:
                self.open[request].sending = False

    def _evict_oldest_sending(self) -> None:
        since = time.monotonic() - self.limits.grace_s
        with self.lock:
            sending = [(o.started, id(c), c) for c, o in self.open.items() if o.sending and o.started < since]
        if sending:
            _hang_up(min(sending)[2])

    def service_actions(self) -> None:
        """Closes each connection past its time (run by serve_forever between accepts)."""
        now = time.monotonic()
        with self.lock:
            late = [
                c
                for c, o in self.open.items()
                if now - o.started > (self.limits.request_s if o.sending else self.limits.answer_s)
            ]
        for connection in late:
            _hang_up(connection)

    def close_all(self) -> None:
        """Stop accepting and close every open connection (their threads end on it)."""
        self.closing = True
        with self.lock:
            every = list(self.open)
        for connection in every:
            _hang_up(connection)


def _hang_up(connection: socket.socket) -> None:
    """Ends the connection under its thread: a blocked read returns at once; the thread closes it."""
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
