"""The scraper against hostile loopback servers: every request ends by its deadline, every connection is
closed, one endpoint holds at most its own two connections, and a healthy endpoint beside stays up."""

from __future__ import annotations

import asyncio

import pytest

from gpumem_tui.sources.engines.endpoints import endpoint
from gpumem_tui.sources.engines.scraper import CONNECTIONS_PER_ENDPOINT, Scraper
from tests.faults import FaultServer, closed

AT_ONCE = CONNECTIONS_PER_ENDPOINT + 1
"""Connections a server may see open at once: the endpoint's two, plus one whose close it has not noticed yet."""
FAST = {"connect_timeout_s": 0.2, "read_timeout_s": 0.3, "deadline_s": 0.6}
"""Short timeouts so a test sees many deadlines pass in a second or two."""


async def test_trickling_answers_never_pile_up_connections_and_the_healthy_endpoint_stays_up():
    # /v1/models slower than the deadline beside a trickling /metrics: the case that leaked one connection per poll
    with FaultServer(metrics="trickle", models="trickle", trickle_s=0.05) as hostile, FaultServer() as healthy:
        scraper = Scraper([endpoint(hostile.url), endpoint(healthy.url)], **FAST)
        states = []
        for _ in range(400):
            bad, good = await scraper.latest(wait_s=0.02)
            await asyncio.sleep(0.02)  # the GPU read between two looks
            states.append(good.state)
            assert hostile.open_now <= AT_ONCE
            if hostile.paths.count("/metrics") >= 6:
                break
        assert hostile.paths.count("/metrics") >= 6, "six deadlines passed"
        assert set(states[states.index("ok") :]) == {"ok"}, "up from its first answer on"
        assert bad.state == "down" and "no complete answer within 0.6 s" in bad.error
        assert hostile.peak <= AT_ONCE and healthy.peak <= AT_ONCE
        await scraper.aclose()
        assert await closed(hostile) and await closed(healthy)


async def test_a_slow_models_list_never_holds_up_metrics_and_is_asked_again_only_later():
    with FaultServer(metrics="ok", models="trickle", trickle_s=0.05) as slow:
        async with Scraper([endpoint(slow.url)], **FAST) as scraper:
            states = [(await scraper.scrape())[0].state for _ in range(8)]
        assert states == ["ok"] * 8
        assert slow.paths.count("/v1/models") == 1 and slow.paths.count("/metrics") == 8
        assert await closed(slow)


@pytest.mark.parametrize(
    ("metrics", "models", "state", "error"),
    [
        pytest.param("hang", "ok", "down", "connected but no answer within 0.3 s", id="hang"),
        pytest.param("trickle", "ok", "down", "no complete answer within 0.6 s", id="trickle"),
        pytest.param("http_500", "ok", "down", "HTTP 500", id="500"),
        pytest.param("huge", "ok", "down", "over the 1,048,576-byte limit: not read further", id="huge-streamed"),
        pytest.param("huge_declared", "ok", "down", "67,108,864 bytes is over the 1,048,576-byte limit", id="huge"),
        pytest.param("cut", "ok", "down", "connection broke mid-answer", id="cut-body"),
        pytest.param("ok", "hang", "ok", None, id="hung-models"),
        pytest.param("ok", "many_models", "ok", None, id="6000-models"),
    ],
)
async def test_each_fault_is_its_own_endpoints_trouble(metrics, models, state, error):
    with FaultServer(metrics=metrics, models=models) as hostile, FaultServer() as healthy:
        async with Scraper([endpoint(hostile.url), endpoint(healthy.url)], max_bytes=2**20, **FAST) as scraper:
            for _ in range(3):
                bad, good = await scraper.scrape()
                assert good.state == "ok" and good.records[0].kv_usage_fraction == pytest.approx(0.42)
                assert bad.state == state and (error is None or error in bad.error)
        assert hostile.flooded < 32 * 2**20, "a body over the cap is not read to its end"
        assert await closed(hostile) and await closed(healthy)


async def test_a_poll_still_out_shows_the_last_answer_then_stale_past_its_deadline():
    with FaultServer() as server:
        scraper = Scraper([endpoint(server.url)], **FAST)
        [first] = await scraper.scrape()
        server.behaviours["/metrics"] = "hang"
        [out] = await scraper.latest(wait_s=0.0)
        assert out.state == "ok" and out.records == first.records
        await asyncio.sleep(0.35)  # past the read timeout: the poll ended in words
        [failed] = await scraper.latest(wait_s=0.0)
        assert failed.state == "stale" and "no answer within 0.3 s" in failed.error
        await scraper.aclose()
        assert await closed(server)


async def test_an_endpoint_that_goes_away_has_its_poll_cancelled_and_its_connections_closed():
    with FaultServer(metrics="hang") as gone, FaultServer() as kept:
        scraper = Scraper([endpoint(gone.url), endpoint(kept.url)], **FAST)
        await scraper.latest(wait_s=0.05)
        assert gone.open_now >= 1
        scraper.endpoints = [endpoint(kept.url)]
        [status] = await scraper.latest(wait_s=0.05)
        assert status.state == "ok" and await closed(gone)
        await scraper.aclose()


async def test_a_poll_already_out_at_the_last_look_is_not_waited_for_again():
    with FaultServer(metrics="trickle", models="trickle") as slow:
        scraper = Scraper([endpoint(slow.url)], read_timeout_s=30, deadline_s=60)
        [first] = await scraper.latest(wait_s=0.05)
        # the poll is out for up to a minute: the next look returns at once instead of waiting 30 s for it
        [again] = await asyncio.wait_for(scraper.latest(wait_s=30), timeout=25)  # a hang guard under 30 s, no timing
        assert first.state == again.state == "down" and "no answer yet" in again.error
        assert slow.paths.count("/metrics") == 1
        await scraper.aclose()
        assert await closed(slow)
