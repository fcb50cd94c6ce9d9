"""An engine endpoint given with a user and password (`--endpoint http://user:password@host:8000`): they go
with its requests (basic auth) and nowhere else: not the engine card's URL, a recording, the exporter's
`endpoint` label, or an error. Before, `Endpoint.url` kept them and every output repeated it."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from gpumem_tui.cli import main
from gpumem_tui.demo.engine_exposition import exposition
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.export.evaluation import Evaluation
from gpumem_tui.export.server import node_families
from gpumem_tui.sources.engines.endpoints import EndpointError, endpoint
from gpumem_tui.sources.engines.scraper import Scraper
from gpumem_tui.sources.replay import Recorder
from tests.faults import HEALTHY
from tests.loopback import serving
from tests.sources.prometheus.server import free_port

SECRET = "hunter2-SECRET"


class _Handler(BaseHTTPRequestHandler):
    """A vLLM engine that notes the Authorization header of each request."""

    seen: list[str | None] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        type(self).seen.append(self.headers.get("Authorization"))
        body = exposition("vllm-v1", [HEALTHY]) if self.path == "/metrics" else b'{"data": []}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's signature
        """Quiet."""


@pytest.fixture
def engine() -> Iterator[str]:
    _Handler.seen = []
    with serving(_Handler) as url:
        yield url


def test_the_endpoint_is_named_without_them():
    point = endpoint(f"http://alice:{SECRET}@127.0.0.1:8000/metrics")
    assert point.url == "http://127.0.0.1:8000"
    with pytest.raises(EndpointError) as caught:  # a password's '/' unencoded: the host would be `alice`
        endpoint(f"http://alice:{SECRET}/x@127.0.0.1:8000")
    assert SECRET not in str(caught.value) and "SECRET" not in str(caught.value)


async def test_they_go_with_the_requests_only(engine, tmp_path):
    given = engine.replace("http://", f"http://alice:{SECRET}@")
    async with Scraper([endpoint(given)]) as scraper:
        [status] = await scraper.scrape()
    assert status.state == "ok" and status.url == engine
    assert set(_Handler.seen) == {"Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()}

    feed = DemoFeed.running("healthy-8b", endpoints=[given])  # the TUI's demo scrapes --endpoint beside
    try:
        sample = await feed.sample()
    finally:
        await feed.aclose()
    assert engine in [e.url for e in sample.engines]
    with Recorder(tmp_path / "node.jsonl") as recorder:
        recorder.write(sample)
    assert SECRET not in (tmp_path / "node.jsonl").read_text() and "alice" not in (tmp_path / "node.jsonl").read_text()
    labels = [s.labels for f in node_families(Evaluation(sample=sample), 5) for s in f.samples]
    assert {"Hostname": sample.hostname, "endpoint": engine} in labels  # gpumem_engine_up of the endpoint
    assert not [values for values in labels if any(SECRET in v or "alice" in v for v in values.values())]


def test_an_error_names_the_endpoint_without_them(capsys):
    assert main(["metrics", f"http://alice:{SECRET}@127.0.0.1:{free_port()}"]) == 3
    captured = capsys.readouterr()
    assert "cannot connect" in captured.err and SECRET not in captured.err and "alice" not in captured.err
