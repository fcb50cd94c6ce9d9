"""An endpoint's GETs are built once by its client and sent again at every poll; a cookie a server set still
goes back with the next polls, as it would on requests built each time."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import httpx
import pytest

from gpumem_tui.demo.engine_exposition import exposition
from gpumem_tui.sources.engines.endpoints import endpoint
from gpumem_tui.sources.engines.scraper import Scraper
from tests.faults import HEALTHY
from tests.loopback import serving


@pytest.fixture
def built(monkeypatch) -> list[str]:
    """The URLs every client built a request for."""
    urls: list[str] = []
    build = httpx.AsyncClient.build_request

    def counted(self, method, url, **options):
        urls.append(str(url))
        return build(self, method, url, **options)

    monkeypatch.setattr(httpx.AsyncClient, "build_request", counted)
    return urls


async def test_each_get_is_built_once_and_sent_at_every_poll(engine_servers, built, make_engine) -> None:
    server = engine_servers[0]
    async with Scraper([endpoint(server.url)]) as scraper:
        first = await scraper.scrape()
        server.update([make_engine(requests_running=40)])
        later = [await scraper.scrape() for _ in range(2)]
    assert sorted(built) == [server.url + "/metrics", server.url + "/v1/models"]
    assert first[0].records[0].requests_running == 12
    assert [s[0].state for s in later] == ["ok", "ok"] and later[-1][0].records[0].requests_running == 40


class _CookieHandler(BaseHTTPRequestHandler):
    """An engine behind a proxy that pins a client to a replica with a cookie, noting the cookies it gets."""

    protocol_version = "HTTP/1.1"
    cookies: list[str | None] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = exposition("vllm-v1", [HEALTHY]) if self.path == "/metrics" else b'{"data": []}'
        if self.path == "/metrics":
            type(self).cookies.append(self.headers.get("Cookie"))
        self.send_response(200)
        self.send_header("Set-Cookie", "replica=b; Path=/")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's signature
        """Quiet."""


@pytest.fixture
def cookie_server() -> Iterator[str]:
    _CookieHandler.cookies = []
    with serving(_CookieHandler) as url:
        yield url


async def test_a_cookie_a_server_set_goes_back_with_the_next_polls(cookie_server) -> None:
    async with Scraper([endpoint(cookie_server)]) as scraper:
        for _ in range(3):
            [status] = await scraper.scrape()
            assert status.state == "ok"
    assert _CookieHandler.cookies[0] in (None, "replica=b") and _CookieHandler.cookies[1:] == ["replica=b"] * 2
