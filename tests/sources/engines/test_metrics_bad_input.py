"""Payloads that are not clean engine metrics: each is refused with a clear reason or degrades one reading."""

from __future__ import annotations

import random

import pytest

from gpumem_tui.demo.engine_exposition import exposition
from gpumem_tui.sources.engines.parse import parse_metrics
from gpumem_tui.sources.engines.prometheus import MetricsError, parse_families, select_lines


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty payload"),
        ("   \n\n", "empty payload"),
        ("<!DOCTYPE html><html><body>502 Bad Gateway</body></html>\n", "HTML page"),
        ('{"detail": "Not Found"}\n', "JSON"),
        (random.Random(3).randbytes(2048).decode("latin-1") + "\n", "no vLLM"),
    ],
)
def test_not_metrics_at_all(text: str, reason: str) -> None:
    with pytest.raises(MetricsError, match=reason):
        parse_metrics(text)


def test_truncated_payload_is_refused_and_a_saved_excerpt_is_not(llama) -> None:
    body = exposition("vllm-v1", [llama]).decode()
    cut = body[: body.index("vllm:kv_cache_usage_perc{") + 30]
    with pytest.raises(MetricsError, match="truncated|malformed"):
        parse_metrics(cut)
    with pytest.raises(MetricsError, match="malformed"):
        parse_metrics(cut, whole=False)  # the cut line itself is malformed
    assert parse_metrics(body.rstrip("\n"), whole=False)[0].kv_usage_fraction == 0.42


def test_duplicate_series_is_refused() -> None:
    text = 'vllm:num_requests_running{model_name="m"} 1\nvllm:num_requests_running{model_name="m"} 2\n'
    with pytest.raises(MetricsError, match="duplicate series vllm:num_requests_running"):
        parse_metrics(text)


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf"])
def test_nan_and_infinity_are_missing_readings_with_a_note(value: str) -> None:
    text = (
        f'vllm:kv_cache_usage_perc{{model_name="m",engine="0"}} {value}\n'
        'vllm:num_requests_running{model_name="m",engine="0"} 3\n'
    )
    [record] = parse_metrics(text)
    assert record.kv_usage_fraction is None and record.requests_running == 3
    assert any(n.startswith("kv_usage_fraction ") and "missing" in n for n in record.notes)
    assert "kv_usage_fraction" in record.dropped  # named by engine_value_implausible, as from a recording


def test_label_values_with_quotes_backslashes_and_newlines_are_kept_exactly(make_engine) -> None:
    model = 'org/we"ird\\name\nsecond line\x1b[31m'
    text = exposition("vllm-v1", [make_engine(model=model)]).decode()
    [record] = parse_metrics(text)
    assert record.model == model and record.kv_usage_fraction == 0.42


def test_ten_megabyte_payload_parses_only_the_wanted_lines(llama) -> None:
    gauges = exposition("vllm-v1", [llama]).decode()
    padding = "".join(
        f'vllm:time_to_first_token_seconds_bucket{{le="{i}",model_name="m"}} {i}.0\n' for i in range(160_000)
    )
    text = padding[: len(padding) // 2] + gauges + padding[len(padding) // 2 :]
    assert len(text) > 10_000_000
    [record] = parse_metrics(text)
    assert record.kv_usage_fraction == 0.42 and record.kv_pool_tokens == 476000


def test_garbage_lines_between_wanted_lines_are_skipped(llama) -> None:
    text = "...\n\x00\x01 junk {{{\n" + exposition("vllm-v1", [llama]).decode() + "not a metric line at all\n"
    assert parse_metrics(text)[0].kv_usage_fraction == 0.42


def test_selection_keeps_exactly_the_wanted_samples_and_matches_a_full_parse(make_engine) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    text = exposition("vllm-v1", [make_engine(), make_engine(model="n")]).decode()
    wanted = {"vllm:kv_cache_usage_perc", "vllm:num_preemptions_total"}
    lines, declared = select_lines(text, wanted)
    assert len(lines) == 4 and declared == wanted
    selected = parse_families(text, wanted)
    full = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name in wanted
    }
    picked = {
        (name, tuple(sorted(s.labels.items()))): s.value for name, samples in selected.samples.items() for s in samples
    }
    assert picked == full
