"""A request handler served on 127.0.0.1 for one test: the engines and query APIs a test needs that the mock
engine and a real Prometheus do not play (one that checks credentials, one that sets cookies, canned or spoilt
answers)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer(ThreadingHTTPServer):
    """A thread per request; a listen queue for a client that opens 8 connections at once (the default is 5)."""

    daemon_threads = True
    request_queue_size = 64


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], server: type[ThreadingHTTPServer] = LoopbackServer) -> Iterator[str]:
    """`handler` on a free loopback port until the block ends; yields the base URL."""
    httpd = server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
