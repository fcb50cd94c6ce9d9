"""A loopback HTTP server that answers every request with one canned reply (or never), for the failures a
real Prometheus does not make on demand: a partial answer with warnings, an answer that is not JSON, a
server that accepts and never answers, or one that sends its answer a byte at a time."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler

from tests.loopback import LoopbackServer, serving


@contextmanager
def answering(
    status: int,
    body: bytes,
    content_type: str = "application/json",
    hang_s: float = 0,
    seen: list[tuple[str, dict[str, str], bytes]] | None = None,
    trickle_s: float = 0,
) -> Iterator[str]:
    """Serve `body` with `status` to every POST (after `hang_s`); yields the base URL. Each request's path,
    headers and form body are appended to `seen` when given. `trickle_s`: the body is sent one byte each
    `trickle_s`, every byte valid JSON's. Leaving ends every hang and trickle and waits for its thread: a
    stalled answer written after the test would print into the next one's output."""
    released = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
            form = self.rfile.read(int(self.headers.get("content-length", 0)))
            if seen is not None:
                seen.append((self.path, dict(self.headers), form))
            if hang_s:
                released.wait(hang_s)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not trickle_s:
                self.wfile.write(body)
            for byte in memoryview(body).cast("c") if trickle_s else ():
                self.wfile.write(byte)
                self.wfile.flush()
                if released.wait(trickle_s):
                    return

        def log_message(self, *args: object) -> None:
            pass

    class Server(LoopbackServer):
        daemon_threads = False  # server_close waits for each request's thread

        def handle_error(self, request: object, client_address: object) -> None:
            """A client that gave up on a stalled answer is the point of `hang_s`: say nothing."""
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    with serving(Handler, Server) as url:
        try:
            yield url
        finally:
            released.set()  # before the server closes: it waits for the hung requests' threads
