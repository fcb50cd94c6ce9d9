"""The HTTP clients' start-up costs: the system's certificates are loaded at the first TLS connection, never by
a client that only speaks plain HTTP, and are trusted once loaded, as `ssl.create_default_context` trusts
them; a request does not search the path for sniffio, which httpcore asks for at every request."""

import asyncio
import contextlib
import http.server
import importlib.util
import ssl
import sys
import threading
from collections.abc import Iterator

import pytest

from gpumem_tui.sources import http as client_http
from gpumem_tui.sources.http import Timeouts, async_client, in_words, read_capped, tls
from tests.datafiles import DATA

CERT, KEY = DATA / "tls" / "localhost.pem", DATA / "tls" / "localhost.key"
TIMEOUTS = Timeouts(connect_s=5, read_s=5, deadline_s=10)


@pytest.fixture
def fresh_context() -> Iterator[None]:
    """This test's own default context (the process keeps one)."""
    client_http._tls.cache_clear()
    yield
    client_http._tls.cache_clear()


@contextlib.contextmanager
def _serving(scheme: str) -> Iterator[str]:
    """A local server on plain HTTP or on TLS with the self-signed certificate; its URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    if scheme == "https":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(CERT, KEY)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"{scheme}://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _get(url: str) -> str:
    async def get() -> str:
        client = async_client(TIMEOUTS, connections=1, headers={})
        try:
            status, _ = await read_capped(client, "GET", url, 10**6)
            return f"HTTP {status}"
        except Exception as exc:  # noqa: BLE001 - the failure is what is asserted
            return in_words(exc, TIMEOUTS)
        finally:
            await client.aclose()

    return asyncio.run(get())


@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest.mark.usefixtures("fresh_context")
def test_plain_http_never_loads_the_system_certificates(scheme, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with _serving(scheme) as url:
        said = _get(url)
    loaded = tls()._made is not None  # type: ignore[attr-defined]
    if scheme == "http":
        assert (said, loaded) == ("HTTP 200", False)
    else:  # loaded, and the self-signed certificate is not among the system's
        assert loaded and "CERTIFICATE_VERIFY_FAILED" in said


@pytest.mark.usefixtures("fresh_context")
def test_the_certificates_loaded_at_the_first_connection_are_trusted(monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(CERT))  # what ssl's default paths read, as the system's store
    with _serving("https") as url:
        assert _get(url) == "HTTP 200"


class _Searches:
    """A finder first on the path that counts the searches for a module name and finds nothing itself."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name, path=None, target=None):  # noqa: ARG002 - the finder protocol
        self.names.append(name)


@pytest.mark.skipif(importlib.util.find_spec("sniffio") is not None, reason="sniffio is installed here")
def test_requests_do_not_search_the_path_for_sniffio_again(monkeypatch):
    searches = _Searches()
    monkeypatch.setattr(sys, "meta_path", [searches, *sys.meta_path])
    with _serving("http") as url:
        said = [_get(url) for _ in range(3)]
    assert said == ["HTTP 200"] * 3
    assert searches.names.count("sniffio") <= 1
