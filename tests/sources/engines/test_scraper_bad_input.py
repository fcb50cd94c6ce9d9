"""Each misbehaving endpoint gets its own clear error; the healthy endpoints beside it stay ok."""

from __future__ import annotations

import pytest

from gpumem_tui.demo.engine_exposition import exposition
from gpumem_tui.sources.engines.endpoints import endpoint
from gpumem_tui.sources.engines.scraper import Scraper

RAW_NAN = (
    'vllm:kv_cache_usage_perc{model_name="m",engine="0"} NaN\n'
    'vllm:num_requests_running{model_name="m",engine="0"} +Inf\n'
)
RAW_DUPLICATE = 'vllm:num_requests_running{model_name="m"} 1\nvllm:num_requests_running{model_name="m"} 2\n'
HTML_200 = "<html><head><title>Login</title></head><body>Please sign in</body></html>\n"


@pytest.mark.parametrize(
    ("fault", "raw", "error"),
    [
        pytest.param("garbage", "", "no vLLM, SGLang, llama.cpp or TGI metrics", id="garbage"),
        pytest.param("html", "", "HTTP 502 Bad Gateway", id="html-error-page"),
        pytest.param("raw", HTML_200, "HTML page", id="html-with-200"),
        pytest.param("truncated", "", "truncated", id="truncated"),
        pytest.param("cut_off", "", "connection broke mid-answer", id="cut-off"),
        pytest.param("raw", RAW_DUPLICATE, "duplicate series", id="duplicate-series"),
        pytest.param("raw", "x" * (10 * 10**6) + "\n", "over the 8,388,608-byte limit", id="10MB"),
        pytest.param("hang", "", "connected but no answer within 0.2 s", id="never-answers"),
        pytest.param("http_500", "", "HTTP 500 Internal Server Error", id="http-500"),
        pytest.param("redirect_loop", "", "too many redirects", id="redirect-loop"),
    ],
)
async def test_bad_endpoint_is_down_and_the_others_are_fine(engine_servers, faulty_server, fault, raw, error):
    faulty_server.set_fault(fault, raw)
    points = (
        [endpoint(s.url) for s in engine_servers[:1]]
        + [endpoint(faulty_server.url)]
        + [endpoint(s.url) for s in engine_servers[1:]]
    )
    async with Scraper(points, read_timeout_s=0.2) as scraper:
        statuses = await scraper.scrape()
    bad = statuses[1]
    assert bad.state == "down" and error in bad.error and bad.records == []
    assert "\n" not in bad.error
    healthy = [s for i, s in enumerate(statuses) if i != 1]
    assert [s.state for s in healthy] == ["ok", "ok", "ok"]
    assert all(s.records[0].kv_usage_fraction == pytest.approx(0.42) for s in healthy)


async def test_nan_and_infinity_degrade_only_those_readings(faulty_server) -> None:
    faulty_server.set_fault("raw", RAW_NAN)
    async with Scraper([endpoint(faulty_server.url)]) as scraper:
        [status] = await scraper.scrape()
    [record] = status.records
    assert status.state == "ok" and record.kv_usage_fraction is None and record.requests_running is None
    assert record.dropped.keys() == {"kv_usage_fraction", "requests_running"}  # one note names both
    assert [n for n in record.notes if "shown as missing" in n] == [
        "kv_usage_fraction not a number, requests_running infinite are not readings; shown as missing"
    ]


async def test_label_values_with_quotes_backslashes_newlines_arrive_intact(faulty_server, make_engine) -> None:
    model = 'a"b\\c\nd'
    faulty_server.set_fault("raw", exposition("vllm-v1", [make_engine(model=model)]))
    async with Scraper([endpoint(faulty_server.url)]) as scraper:
        [status] = await scraper.scrape()
    assert status.state == "ok" and status.records[0].model == model
