"""The simulated engine server speaks real HTTP with the engines' exact metric names and labels."""

from __future__ import annotations

import json
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpumem_tui.sources.mock.engine_server import MockEngineServer
from gpumem_tui.sources.mock.engine_state import EngineState

STATE = EngineState(
    model="m", max_model_len=4096, num_gpu_blocks=100, kv_usage_fraction=0.5, preemptions_total=2
)
EXPECTED = {
    "vllm-v1": {
        "vllm:kv_cache_usage_perc": {"model_name", "engine"},
        "vllm:num_preemptions_total": {"model_name", "engine"},
        "vllm:prefix_cache_queries_total": {"model_name", "engine"},
    },
    "vllm-v0": {
        "vllm:gpu_cache_usage_perc": {"model_name"},
        "vllm:cpu_cache_usage_perc": {"model_name"},
        "vllm:num_requests_swapped": {"model_name"},
    },
    "sglang": {"sglang:token_usage": {"model_name"}, "sglang:max_total_num_tokens": {"model_name"}},
}


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as answer:  # noqa: S310 - loopback test server
        return answer.read().decode()


@pytest.mark.parametrize("flavour", list(EXPECTED))
def test_metrics_names_and_label_sets(flavour: str) -> None:
    with MockEngineServer([STATE], flavour) as server:
        text = _get(server.url + "/metrics")
    assert server.url.startswith("http://127.0.0.1:")
    labels = {s.name: set(s.labels) for f in text_string_to_metric_families(text) for s in f.samples}
    for name, label_set in EXPECTED[flavour].items():
        assert labels[name] == label_set


def test_cache_config_info_carries_the_pool_as_labels() -> None:
    with MockEngineServer([STATE]) as server:
        text = _get(server.url + "/metrics")
    [info] = [
        s
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "vllm:cache_config_info"
    ]
    assert (info.labels["num_gpu_blocks"], info.labels["block_size"], info.labels["engine"]) == (
        "100",
        "16",
        "0",
    )
    assert STATE.pool_tokens == 1600


def test_models_endpoint_and_updates() -> None:
    with MockEngineServer([STATE]) as server:
        first = json.loads(_get(server.url + "/v1/models"))
        server.update([STATE, STATE.model_copy(update={"model": "n", "max_model_len": 2048})])
        second = json.loads(_get(server.url + "/v1/models"))
    assert [(m["id"], m["max_model_len"]) for m in first["data"]] == [("m", 4096)]
    assert [(m["id"], m["max_model_len"]) for m in second["data"]] == [("m", 4096), ("n", 2048)]
