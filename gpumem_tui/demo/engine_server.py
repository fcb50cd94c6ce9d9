"""A real HTTP server on 127.0.0.1 (or another loopback address: a simulated pod's), on an ephemeral port,
serving a simulated engine's /metrics and /v1/models (and, as SGLang, /get_server_info and /get_model_info).

Its input is the simulated node's `EngineState`: a fixed list, or a callable asked on every request
(`MockEngineServer(lambda: [node.engine_state("llama")])`). Only engines that serve (`phase == ready`)
appear; with none up, /metrics answers 503 as a still-loading engine would fail the scrape.

It can also misbehave on purpose (an error page, a hang, a redirect loop, ...) so the demo and the
tests exercise the scraper's failure paths against real sockets.
"""

from __future__ import annotations

import json
import random
import selectors
import socket
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

from gpumem_tui.demo.engine_exposition import Flavour, exposition
from gpumem_tui.demo.engine_info import PATHS, answer
from gpumem_tui.demo.engine_state import EngineState

States = Sequence[EngineState] | Callable[[], Sequence[EngineState]]
Fault = Literal["none", "http_500", "html", "garbage", "truncated", "cut_off", "hang", "redirect_loop", "raw"]


class MockEngineServer:
    """Serves the current engine states; `update` and `set_fault` may be called from any thread."""

    def __init__(self, engines: States, flavour: Flavour = "vllm-v1", host: str = "127.0.0.1") -> None:
        self.flavour = flavour
        self._engines = engines
        self._fault: Fault = "none"
        self._raw = b""
        self._info: bytes | None = None
        self._lock = threading.Lock()
        self.release = threading.Event()
        self.stopped = False
        self._httpd = _QuietServer((host, 0), _Handler)
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._wake, self._waker = socket.socketpair()
        """`stop` writes to `_waker`: the serving thread sleeps in select between requests, with no poll interval."""
        self._thread = threading.Thread(target=self._serve, name="mock-engine", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://{name}:{port}"

    def start(self) -> MockEngineServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Die as an engine does: new connections are refused and kept-alive ones get no answer."""
        if self.stopped:
            return
        self.stopped = True
        self.release.set()
        self._waker.send(b"\0")
        if self._thread.ident is not None:
            self._thread.join()
        self._httpd.server_close()
        self._wake.close()
        self._waker.close()

    def _serve(self) -> None:
        """Take each new connection (a thread of its own serves it) until `stop` wakes this thread: idle, it
        waits in select and costs nothing (socketserver's `serve_forever` wakes every poll interval)."""
        with selectors.DefaultSelector() as selector:
            selector.register(self._httpd, selectors.EVENT_READ)
            selector.register(self._wake, selectors.EVENT_READ)
            while not self.stopped:
                ready = {key.fileobj for key, _ in selector.select()}
                if self._httpd in ready and not self.stopped:
                    self._httpd.handle_request()

    def __enter__(self) -> MockEngineServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def update(self, engines: States) -> None:
        with self._lock:
            self._engines = engines

    def set_fault(self, fault: Fault, raw: bytes | str = b"") -> None:
        """Misbehave from the next request on; `raw` is the body served for the `raw` fault."""
        with self._lock:
            self._fault = fault
            self._raw = raw.encode() if isinstance(raw, str) else raw

    def set_info(self, raw: bytes | str | None) -> None:
        """Answer /get_server_info with this body from the next request on (None: the engine's own answer)."""
        with self._lock:
            self._info = raw.encode() if isinstance(raw, str) else raw

    def info(self, path: str, engines: Sequence[EngineState]) -> bytes | None:
        """An SGLang server's answer at `path` for its first engine, or None where it has none (not SGLang, or
        no engine serves)."""
        if self.flavour != "sglang" or not engines:
            return None
        with self._lock:
            raw = self._info
        if path == PATHS[0] and raw is not None:
            return raw
        said = answer(path, engines[0].model_copy(update={"engine": "sglang"}))
        return None if said is None else said.encode()

    def snapshot(self) -> tuple[tuple[EngineState, ...], Fault, bytes]:
        """The engines serving now, the fault and the raw body, read together."""
        with self._lock:
            engines, fault, raw = self._engines, self._fault, self._raw
        listed = engines() if callable(engines) else engines
        return tuple(e for e in listed if e.serving), fault, raw


class _QuietServer(ThreadingHTTPServer):
    """A client hanging up on a stalled answer is part of the act, not an error to print."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """Say nothing."""


class _Handler(BaseHTTPRequestHandler):
    """Routes /metrics and /v1/models; everything else is 404."""

    protocol_version = "HTTP/1.1"
    wbufsize = 64 * 1024
    """Headers and body leave in one send when the handler returns (unbuffered, they took two)."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's signature
        """Quiet: a test run or the demo should not print access logs."""

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        owner: MockEngineServer = self.server.owner  # type: ignore[attr-defined]
        if owner.stopped:
            self.close_connection = True
            return
        engines, fault, raw = owner.snapshot()
        path = self.path.split("?")[0]
        info = owner.info(path, engines) if path in PATHS else None
        if path == "/v1/models":
            self._send(200, _models_body(engines), "application/json")
        elif info is not None:
            self._send(200, info, "application/json")
        elif path == "/metrics":
            self._metrics(owner, engines, fault, raw)
        elif fault == "redirect_loop" and path.startswith("/loop"):
            self._redirect("/metrics")
        else:
            self._send(404, b"not found\n", "text/plain")

    def _metrics(self, owner: MockEngineServer, engines: tuple[EngineState, ...], fault: Fault, raw: bytes) -> None:
        body = exposition(owner.flavour, engines)
        if fault == "hang":
            owner.release.wait()
        elif fault == "http_500":
            self._send(500, b"Internal Server Error\n", "text/plain")
        elif fault == "html":
            self._send(502, _HTML, "text/html")
        elif fault == "garbage":
            self._send(200, random.Random(7).randbytes(4096), "text/plain")
        elif fault == "truncated":
            self._send(200, body[: len(body) * 2 // 3], "text/plain")
        elif fault == "cut_off":
            self._send_cut(body)
        elif fault == "redirect_loop":
            self._redirect("/loop")
        elif fault == "raw":
            self._send(200, raw, "text/plain; version=0.0.4")
        elif not engines:
            self._send(503, b"engine is not ready\n", "text/plain")
        else:
            self._send(200, body, "text/plain; version=0.0.4; charset=utf-8")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_cut(self, body: bytes) -> None:
        """Promise the whole body, send half, hang up: the connection dies mid-answer."""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        self.close_connection = True

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _models_body(engines: Sequence[EngineState]) -> bytes:
    data = [
        {
            "id": e.model,
            "object": "model",
            "owned_by": "vllm",
            "root": e.model,
            "max_model_len": e.max_model_len,
        }
        for e in engines
    ]
    return json.dumps({"object": "list", "data": data}).encode()


_HTML = (
    b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>\n"
)
