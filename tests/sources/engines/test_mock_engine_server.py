"""The simulated engine server speaks real HTTP with the engines' exact metric names and labels."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpumem_tui.demo.engine_server import MockEngineServer

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
    "sglang": {
        "sglang:token_usage": {"model_name", "engine_type", "tp_rank", "pp_rank"},
        "sglang:max_total_num_tokens": {"model_name", "engine_type", "tp_rank", "pp_rank"},
    },
}


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as answer:  # noqa: S310 - loopback test server
        return answer.read().decode()


@pytest.mark.parametrize("flavour", list(EXPECTED))
def test_metrics_names_and_label_sets(flavour: str, llama) -> None:
    with MockEngineServer([llama], flavour) as server:
        text = _get(server.url + "/metrics")
    assert server.url.startswith("http://127.0.0.1:")
    labels = {s.name: set(s.labels) for f in text_string_to_metric_families(text) for s in f.samples}
    for name, label_set in EXPECTED[flavour].items():
        assert labels[name] == label_set


def test_cache_config_info_carries_the_pool_as_labels(llama) -> None:
    with MockEngineServer([llama]) as server:
        text = _get(server.url + "/metrics")
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    [info] = [s for s in samples if s.name == "vllm:cache_config_info"]
    assert (info.labels["num_gpu_blocks"], info.labels["block_size"], info.labels["engine"]) == ("29750", "16", "0")


def test_models_endpoint_follows_a_state_callable(make_engine) -> None:
    states = [make_engine()]
    with MockEngineServer(lambda: states) as server:
        first = json.loads(_get(server.url + "/v1/models"))
        states.append(make_engine(model="n", max_model_len=2048))
        second = json.loads(_get(server.url + "/v1/models"))
    assert [(m["id"], m["max_model_len"]) for m in first["data"]] == [("meta-llama/Llama-3.1-8B-Instruct", 8192)]
    assert [m["id"] for m in second["data"]] == ["meta-llama/Llama-3.1-8B-Instruct", "n"]


def test_an_engine_that_is_still_loading_is_not_served(make_engine) -> None:
    with MockEngineServer([make_engine(phase="loading")]) as server:
        with pytest.raises(urllib.error.HTTPError) as answer:
            _get(server.url + "/metrics")
        models = json.loads(_get(server.url + "/v1/models"))
    assert answer.value.code == 503 and models["data"] == []


def test_an_idle_server_waits_without_a_poll_interval_and_stops_at_once(llama, monkeypatch) -> None:
    """Between samples the demo's servers cost nothing: the accepting thread waits in select with no
    timeout (a poll interval wakes it many times a second, for each engine), and `stop` wakes it."""
    import selectors

    waits: list[float | None] = []

    class Watched(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
        def select(self, timeout=None):
            waits.append(timeout)
            return super().select(timeout)

    monkeypatch.setattr(selectors, "DefaultSelector", Watched)
    server = MockEngineServer([llama]).start()
    assert "vllm:kv_cache_usage_perc" in _get(server.url + "/metrics")
    server.stop()
    assert waits and set(waits) == {None}
    assert not server._thread.is_alive()
