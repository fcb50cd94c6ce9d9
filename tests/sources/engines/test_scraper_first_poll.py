"""A scraper's first poll loads what its clients need (httpx; the certificates wait for a TLS connection)
once, in a thread: the event loop it runs on (the app's screen) goes on drawing and taking keys meanwhile, and
building a scraper (before the app's first frame) loads none of it."""

from __future__ import annotations

import threading

from gpumem_tui.sources.engines import scraper as scraper_module
from gpumem_tui.sources.engines.endpoints import endpoint
from gpumem_tui.sources.engines.scraper import Scraper


async def test_httpx_and_the_certificates_are_loaded_once_off_the_event_loop(engine_servers, monkeypatch):
    loaded: list[threading.Thread] = []
    prepare = scraper_module.prepare

    def watched() -> None:
        loaded.append(threading.current_thread())
        prepare()

    monkeypatch.setattr(scraper_module, "prepare", watched)
    async with Scraper([endpoint(s.url) for s in engine_servers]) as scraper:
        assert loaded == []  # built: nothing loaded yet
        first = await scraper.scrape()
        second = await scraper.scrape()
    assert [s.state for s in first + second] == ["ok"] * (len(first) + len(second))
    assert len(loaded) == 1 and loaded[0] is not threading.main_thread()
