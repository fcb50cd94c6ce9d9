"""Where a payload is parsed: a small one on the event loop (the hop to a thread and back cost more), a large
one on the scraper's own thread, so the screen keeps drawing while it is read."""

from __future__ import annotations

import threading

from gpumem_tui.sources.engines import scraper as scraper_module
from gpumem_tui.sources.engines.endpoints import endpoint
from gpumem_tui.sources.engines.scraper import PARSED_ON_LOOP, Scraper
from tests.faults import FaultServer


async def test_a_small_payload_is_parsed_on_the_loop_and_a_large_one_off_it(monkeypatch) -> None:
    where: list[tuple[int, str]] = []
    parse = scraper_module.parse_metrics

    def noted(text, **options):
        where.append((len(text), threading.current_thread().name))
        return parse(text, **options)

    monkeypatch.setattr(scraper_module, "parse_metrics", noted)
    with FaultServer("ok") as small, FaultServer("many_metrics") as large:
        async with Scraper([endpoint(small.url), endpoint(large.url)]) as scraper:
            statuses = await scraper.scrape()
    assert [s.state for s in statuses] == ["ok", "ok"]
    (small_size, small_thread), (large_size, large_thread) = sorted(where)
    assert small_size <= PARSED_ON_LOOP < large_size
    assert small_thread == threading.main_thread().name and large_thread.startswith("gpumem-parse")
