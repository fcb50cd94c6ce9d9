"""Bad values that once reached deep code: each is now a one-line error (exit 2) or a missing reading."""

from __future__ import annotations

import pytest

from gpumem_tui.catalog import CatalogError
from gpumem_tui.catalog.hfconfig import model_from_config
from gpumem_tui.cli import main
from gpumem_tui.sources.engines.endpoints import EndpointError, endpoint
from gpumem_tui.sources.engines.parse import parse_metrics
from gpumem_tui.sources.pace import Pace


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--interval", "nan"], "--interval"),
        (["--interval", "0.01"], "from 0.1"),
        (["--speed", "inf"], "--speed"),
        (["snapshot", "--demo", "healthy-8b", "--at", "nan"], "--at"),
        (["snapshot", "--demo", ""], "unknown scenario ''"),
        (["plan", "--model", "", "--gpu", "h100"], "--model needs a name"),
        (["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpu-memory", "0GB"], "more than 0"),
        (["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--context", "99999999999999"], "--context"),
        (["metrics", "http://[::1"], "not a valid URL"),
        (["metrics", "http://127.0.0.1:99999/metrics"], "Port out of range"),
        (["offload", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "3"], "64 attention heads"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err
    assert not err.startswith("gpumem-tui: gpumem-tui")


BASE = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "vocab_size": 100,
}


@pytest.mark.parametrize(
    "bad",
    [
        {"num_hidden_layers": "x"},
        {"num_hidden_layers": float("inf")},
        {"num_hidden_layers": [1]},
        {"hidden_size": float("nan")},
        {"num_local_experts": 8, "num_experts_per_tok": "a"},
        {"model_type": "deepseek_v3", "kv_lora_rank": 512},
    ],
)
def test_a_config_json_with_values_of_the_wrong_kind_is_a_catalog_error(bad):
    with pytest.raises(CatalogError) as err:
        model_from_config({**BASE, **bad}, "lab/odd")
    assert "lab/odd" in str(err.value) and "\n" not in str(err.value)


def test_a_quantization_config_that_is_not_a_table_is_ignored():
    spec, _ = model_from_config({**BASE, "quantization_config": 5}, "lab/odd")
    assert spec.checkpoint_format is None


@pytest.mark.parametrize("url", ["http://[::1", "http://host:99999", "ftp://host:21"])
def test_endpoints_refuse_what_is_not_an_http_url(url):
    with pytest.raises(EndpointError):
        endpoint(url)


def test_impossible_metric_values_are_missing_readings_with_a_note():
    payload = (
        '# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name="m"} -1\n'
        '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 1e300\n'
        '# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name="m"} 0.5\n'
    )
    [record] = parse_metrics(payload)
    assert record.requests_waiting is None and record.requests_running is None
    assert record.kv_usage_fraction == 0.5
    assert any("requests_waiting negative (-1)" in note and "beyond a 64-bit counter" in note for note in record.notes)
    assert record.dropped.keys() == {"requests_waiting", "requests_running"}  # named: engine_value_implausible


def test_pace_stands_still_while_paused():
    now = [100.0]
    pace = Pace(lambda: now[0])
    now[0] = 110
    pace.pause()
    now[0] = 150
    assert pace() == 10
    pace.resume()
    now[0] = 155
    assert pace() == 15
