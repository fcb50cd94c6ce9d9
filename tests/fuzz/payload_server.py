"""A loopback HTTP server that answers /metrics and /v1/models with whatever bytes a test sets: the
fuzzers' way to send hostile payloads through the real scraper and `gpumem-tui metrics URL`."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class PayloadServer:
    """`with PayloadServer() as server: server.metrics = b"..."; server.models = b"..."` on 127.0.0.1."""

    def __init__(self) -> None:
        self.metrics = b""
        self.models: bytes | None = None
        """None answers /v1/models with 404, as an engine without that route does."""
        self._httpd = _QuietServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> PayloadServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hangs up mid-answer (the scraper's size cap, a timeout) is not the test's output."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's signature
        """Quiet."""

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        owner: PayloadServer = self.server.owner  # type: ignore[attr-defined]
        path = self.path.split("?")[0]
        if path == "/metrics":
            self._send(200, owner.metrics, "text/plain; version=0.0.4")
        elif path == "/v1/models" and owner.models is not None:
            self._send(200, owner.models, "application/json")
        else:
            self._send(404, b"not found\n", "text/plain")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
