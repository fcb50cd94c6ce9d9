"""A sample line parsed before is not parsed again: a scrape hands prometheus_client only the lines it has not
met (those whose value moved), and what it reads is what a whole parse reads."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpumem_tui.demo.engine_exposition import exposition
from gpumem_tui.sources.engines import prometheus
from gpumem_tui.sources.engines.parse import parse_metrics
from gpumem_tui.sources.engines.prometheus import MetricsError, parse_families


@pytest.fixture
def parsed(monkeypatch) -> list[str]:
    """The sample lines handed to prometheus_client, with nothing kept to start with."""
    handed: list[str] = []

    def counted(text):
        handed.extend(text.splitlines())
        return text_string_to_metric_families(text)

    monkeypatch.setattr(prometheus, "_kept", {})
    monkeypatch.setattr(prometheus, "text_string_to_metric_families", counted)
    return handed


def test_a_second_scrape_parses_only_the_lines_that_changed(parsed, make_engine) -> None:
    first = parse_metrics(exposition("vllm-v1", [make_engine()]).decode())
    assert len(parsed) == 7  # running, waiting, KV usage, preemptions, prefix queries and hits, the pool's settings
    parsed.clear()
    busier = exposition("vllm-v1", [make_engine(requests_running=40, kv_usage_fraction=0.5)]).decode()
    second = parse_metrics(busier)
    assert [line.split("{")[0] for line in parsed] == ["vllm:num_requests_running", "vllm:kv_cache_usage_perc"]
    prometheus._kept.clear()
    assert parse_metrics(busier) == second  # what a parse of every line reads
    assert (second[0].requests_running, second[0].kv_usage_fraction) == (40, 0.5)
    assert second[0].model_copy(update={"requests_running": 12, "kv_usage_fraction": 0.42}) == first[0]


def test_lines_kept_still_count_as_duplicates_and_a_bad_line_still_fails(parsed) -> None:
    parse_families('m{a="1"} 1\nm{a="2"} 2\n', {"m"})
    with pytest.raises(MetricsError, match="duplicate series m"):
        parse_families('m{a="1"} 1\nm{a="1"} 1\n', {"m"})
    with pytest.raises(MetricsError, match="malformed"):
        parse_families('m{a="1"} 1\nm{x= 2\n', {"m"})
    assert parsed == ['m{a="1"} 1', 'm{a="2"} 2', "m{x= 2"]


def test_no_more_lines_are_kept_than_the_bound(monkeypatch) -> None:
    monkeypatch.setattr(prometheus, "_kept", {})
    monkeypatch.setattr(prometheus, "KEPT_LINES", 3)
    parse_families('m{a="1"} 1\nm{a="2"} 2\n', {"m"})
    parse_families('m{a="3"} 3\nm{a="4"} 4\n', {"m"})  # one more than the bound: what was kept goes first
    assert set(prometheus._kept) == {'m{a="3"} 3', 'm{a="4"} 4'}
    parse_families(f'm{{x="{"y" * prometheus.KEPT_LINE}"}} 1\n', {"m"})  # a line this long is not kept
    assert set(prometheus._kept) == {'m{a="3"} 3', 'm{a="4"} 4'}
    parse_families("".join(f'm{{a="{k}"}} {k}\n' for k in range(10)), {"m"})  # more than the bound in one parse
    assert len(prometheus._kept) == 3
    prometheus.forget_lines()
    assert prometheus._kept == {}
