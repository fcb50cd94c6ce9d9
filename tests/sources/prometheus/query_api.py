"""A loopback query API that answers the fleet's own queries with the simulated fleet's answers, copied to any
scale and corrupted on demand: the hostile Prometheus (or proxy) of the fleet's robustness tests and of
bench/fleet_scale.py.

Each query of the table that takes no argument is recognised by its PromQL (default settings) and answered
with its demo answer (demo/fleet_answers.py's forms over `fleet --demo`'s fleet), every series copied
`copies` times with its node, GPU, pod and address labels made distinct per copy. Anything else (a query with
an argument, the quiet queries merged in one request, the label API) answers an empty result. `corrupt` maps
the answer's JSON items (a list of dicts) to what is sent; `body` replaces the whole body where given; `delay_s`
makes every answer wait (a slow Thanos, healthy but far away)."""

from __future__ import annotations

import functools
import gzip
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs

from tests import loopback
from tests.loopback import LoopbackServer

DISTINCT = ("Hostname", "hostname", "node", "kubernetes_node", "instance", "UUID", "pod", "exported_pod")
"""The labels made distinct per copy: a copy is another node with its own GPUs, pods and addresses."""
Corrupt = Callable[[list[dict[str, Any]]], Any]


@dataclass
class Api:
    """What the server answers: `copies` of the demo fleet's answers, through `corrupt`; or `body` to every
    query; `chunked` sends the body without a length; `gzip` compresses it (and says so). With `upstream`, a
    proxy: each query is asked of that real Prometheus and its vector answer passed through `corrupt`."""

    copies: int = 1
    others: str | None = None
    """The query whose answer every query not recognised gets (a node's drill-down asks with arguments)."""
    corrupt: Corrupt | None = None
    body: bytes | None = None
    chunked: bool = False
    gzip: bool = False
    upstream: str | None = None
    delay_s: float = 0.0
    """Each answer is sent this long after its request came (each request's own wait: a slow but healthy server)."""
    asked: list[str] = field(default_factory=list)
    """The path of every request, as it came."""
    answered: dict[str, bytes] = field(default_factory=dict)
    _gzipped: dict[int, bytes] = field(default_factory=dict)
    _gzipping: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.gzip and self.body is not None:  # before any command's clock starts
            self.compressed(self.body)

    def compressed(self, body: bytes) -> bytes:
        """`body` gzipped, once per body (a bomb of 1 GiB takes seconds): the client's first requests come
        together, and each compressing it too took, under load, past the command's deadline."""
        with self._gzipping:
            if id(body) not in self._gzipped:
                self._gzipped[id(body)] = gzip.compress(body, compresslevel=6)
            return self._gzipped[id(body)]

    def answer(self, promql: str, path: str = "/api/v1/query", form: bytes = b"") -> bytes:
        if self.body is not None:
            return self.body
        if self.upstream is not None:
            return self.proxied(path, form)
        if promql not in self.answered:
            asked = _items(promql) or (_items(_promql(self.others)) if self.others else [])
            items = [copy for item in asked for copy in _copies(item, self.copies)]
            result = self.corrupt(items) if self.corrupt is not None else items
            data = {"resultType": "vector", "result": result}
            self.answered[promql] = json.dumps({"status": "success", "data": data}).encode()
        return self.answered[promql]

    def proxied(self, path: str, form: bytes) -> bytes:
        """The upstream's answer to this request, its vector results corrupted (ranges and errors as they are)."""
        asked = urllib.request.Request(self.upstream + path, data=form, method="POST")  # type: ignore[operator]
        try:
            with urllib.request.urlopen(asked, timeout=10) as response:  # noqa: S310 - a loopback test server
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.read()
        data = answer.get("data") or {}
        if self.corrupt is not None and data.get("resultType") == "vector":
            data["result"] = self.corrupt(data["result"])
        return json.dumps(answer).encode()


@functools.cache
def _demo() -> dict[str, list[dict[str, Any]]]:
    """The demo fleet's answer to each argument-free query, by its PromQL, as the API's JSON items."""
    from gpumem_tui.demo.fleet_answers import demo_rows
    from gpumem_tui.demo.promql import Stored, answer, go_float
    from gpumem_tui.sources.prometheus.queries import Queries
    from gpumem_tui.sources.prometheus.query_table import TABLE

    rows = demo_rows()
    now = max(row[-1] for row in rows)
    stored = Stored(rows)
    by_promql = {}
    for query in TABLE.values():
        try:
            promql = query.promql(Queries())
            form = query.demo()
        except TypeError:  # a query that takes an argument
            continue
        series = answer(form, stored, now).series
        by_promql[promql] = [{"metric": s.labels, "value": [s.timestamp, go_float(s.value)]} for s in series]
    return by_promql


def _items(promql: str) -> list[dict[str, Any]]:
    return _demo().get(promql, [])


def _copies(item: dict[str, Any], copies: int) -> Iterator[dict[str, Any]]:
    yield item
    for k in range(1, copies):
        metric = {n: f"{v}-{k}" if n in DISTINCT else v for n, v in item["metric"].items()}
        yield {"metric": metric, "value": item["value"]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    api: Api

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self._slow()
        if self.api.upstream is None:
            self._send(b'{"status":"success","data":[]}')
            return
        try:
            with urllib.request.urlopen(self.api.upstream + self.path, timeout=10) as response:  # noqa: S310
                self._send(response.read())
        except urllib.error.HTTPError as exc:
            self._send(exc.read())

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        form = parse_qs(raw.decode())
        self._slow()
        self._send(self.api.answer(form.get("query", [""])[0], self.path, raw))

    def _slow(self) -> None:
        """The request counted, and answered after `delay_s` (a server that is slow, not hung)."""
        self.api.asked.append(self.path)
        if self.api.delay_s:
            threading.Event().wait(self.api.delay_s)

    def _send(self, body: bytes) -> None:
        if self.api.gzip:
            body = self.api.compressed(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.api.gzip:
            self.send_header("Content-Encoding", "gzip")
        if self.api.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self._write(body)
        except OSError:  # the client gave up (a cap reached): the point of the test
            self.close_connection = True

    def _write(self, body: bytes) -> None:
        if not self.api.chunked:
            self.wfile.write(body)
            return
        for at in range(0, len(body), 2**16):
            part = body[at : at + 2**16]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serving(api: Api) -> Iterator[str]:
    """The API on a free loopback port; yields its base URL."""
    handler = type("Handler", (_Handler,), {"api": api})

    class Server(LoopbackServer):
        def handle_error(self, request: object, client_address: object) -> None:
            """A client that stopped reading at its cap is the point: say nothing."""

    with loopback.serving(handler, Server) as url:
        yield url


def gpu_series() -> int:
    """How many series the demo fleet's per-GPU memory answer holds: `copies` of it make N."""
    return len(_items(_promql("gpu_memory")))


def _promql(name: str) -> str:
    from gpumem_tui.sources.prometheus.queries import Queries
    from gpumem_tui.sources.prometheus.query_table import TABLE

    return TABLE[name].promql(Queries())
