"""The scraper against real loopback servers: concurrent polls, /v1/models, ok / stale / down, rates."""

from __future__ import annotations

import socket

from gpumem_tui.sources.engines.endpoints import endpoint
from gpumem_tui.sources.engines.scraper import Scraper


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_every_flavour_scraped_at_once_with_served_model_length(engine_servers) -> None:
    async with Scraper([endpoint(s.url) for s in engine_servers]) as scraper:
        statuses = await scraper.scrape()
    assert [s.state for s in statuses] == ["ok", "ok", "ok"]
    engines = [(s.records[0].engine, s.records[0].version_family) for s in statuses]
    assert engines == [("vllm", "v1"), ("vllm", "v0"), ("sglang", None)]
    for status, server in zip(statuses, engine_servers, strict=True):
        [record] = status.records
        assert (record.endpoint, record.model, record.max_model_len) == (
            server.url,
            "meta-llama/Llama-3.1-8B-Instruct",
            8192,
        )
        assert record.kv_pool_tokens == 29750 * 16 and status.error is None


async def test_failure_after_a_good_poll_is_stale_with_age_then_down(faulty_server) -> None:
    clock = Clock()
    async with Scraper([endpoint(faulty_server.url)], clock=clock, stale_limit_s=30) as scraper:
        assert (await scraper.scrape())[0].state == "ok"
        faulty_server.set_fault("http_500")
        clock.now += 12.5
        [stale] = await scraper.scrape()
        assert (stale.state, stale.age_s, stale.error) == ("stale", 12.5, "HTTP 500 Internal Server Error")
        assert stale.records[0].kv_usage_fraction == 0.42  # the last good sample
        clock.now += 30
        [down] = await scraper.scrape()
        assert (down.state, down.records, down.error) == ("down", [], "HTTP 500 Internal Server Error")
        faulty_server.set_fault("none")
        assert (await scraper.scrape())[0].state == "ok"


async def test_preemption_rate_from_two_polls(faulty_server, make_engine) -> None:
    clock = Clock()
    async with Scraper([endpoint(faulty_server.url)], clock=clock) as scraper:
        [first] = await scraper.scrape()
        faulty_server.update([make_engine(preemptions_total=37)])
        clock.now += 30
        [second] = await scraper.scrape()
    assert first.records[0].preemptions_per_min is None
    assert second.records[0].preemptions_per_min == 60.0  # 30 more in 30 s


async def test_updates_to_the_engine_state_show_on_the_next_poll(faulty_server, make_engine) -> None:
    async with Scraper([endpoint(faulty_server.url + "/metrics")]) as scraper:
        faulty_server.update(lambda: [make_engine(kv_usage_fraction=0.9, requests_waiting=40)])
        [status] = await scraper.scrape()
    assert (status.records[0].kv_usage_fraction, status.records[0].requests_waiting) == (0.9, 40)


async def test_refused_connection_is_down_in_words() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connections are refused
        async with Scraper([endpoint(f"127.0.0.1:{port}")]) as scraper:
            [status] = await scraper.scrape()
    assert status.state == "down" and status.error.startswith("cannot connect")


def test_endpoint_forms() -> None:
    plain, with_path = endpoint("10.0.0.5:8000"), endpoint("http://10.0.0.5:8000/metrics")
    assert plain == with_path
    assert (plain.url, plain.metrics_url, plain.models_url) == (
        "http://10.0.0.5:8000",
        "http://10.0.0.5:8000/metrics",
        "http://10.0.0.5:8000/v1/models",
    )
