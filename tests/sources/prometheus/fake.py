"""A loopback HTTP server that answers every request with one canned reply (or never), for the failures a
real Prometheus does not make on demand: a partial answer with warnings, an answer that is not JSON, a
server that accepts and never answers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def answering(
    status: int,
    body: bytes,
    content_type: str = "application/json",
    hang_s: float = 0,
    seen: list[tuple[str, dict[str, str], bytes]] | None = None,
) -> Iterator[str]:
    """Serve `body` with `status` to every POST (after `hang_s`); yields the base URL. Each request's path,
    headers and form body are appended to `seen` when given."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
            form = self.rfile.read(int(self.headers.get("content-length", 0)))
            if seen is not None:
                seen.append((self.path, dict(self.headers), form))
            if hang_s:
                time.sleep(hang_s)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        request_queue_size = 64  # the client opens 8 connections at once; the default backlog is 5

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
