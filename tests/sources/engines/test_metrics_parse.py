"""Normalizing /metrics payloads: real calibration payloads, every exposition flavour, old and new names."""

from __future__ import annotations

import pytest

from gpumem_tui.demo.engine_exposition import exposition
from gpumem_tui.sources.engines.llamacpp import REMOVED_NOTE
from gpumem_tui.sources.engines.parse import parse_metrics
from gpumem_tui.sources.engines.prometheus import MetricsError
from tests.datafiles import METRICS


def _payload(name: str) -> str:
    return (METRICS / name).read_text(encoding="utf-8")


def test_sglang_docs_payload() -> None:
    [record] = parse_metrics(_payload("sglang_docs_production_metrics_llama31_8b.prom"), whole=False)
    assert (record.engine, record.model) == ("sglang", "meta-llama/Llama-3.1-8B-Instruct")
    assert (record.kv_usage_fraction, record.requests_running, record.requests_waiting) == (0.28, 162, 2826)
    assert record.prefix_cache_hit_rate == pytest.approx(0.007507552643049313)
    assert record.kv_pool_tokens is None and any("max_total_num_tokens" in n for n in record.notes)


def test_vllm_v0_payload_with_declarations_only_is_vllm_v0_with_nothing_measured() -> None:
    [record] = parse_metrics(_payload("vllm_v0_0.5.4_help_type_meetkai263.prom"), whole=False)
    assert (record.engine, record.version_family) == ("vllm", "v0")
    assert record.kv_usage_fraction is None and record.requests_running is None  # missing, never 0
    assert record.notes


def test_dcgm_payload_is_not_engine_metrics() -> None:
    with pytest.raises(MetricsError, match="no vLLM, SGLang, llama.cpp or TGI metrics"):
        parse_metrics(_payload("dcgm_exporter_readme_quickstart.prom"), whole=False)


@pytest.mark.parametrize("flavour", ["vllm-v1", "vllm-v0", "sglang"])
def test_every_mock_flavour_round_trips(flavour: str, make_engine) -> None:
    state = make_engine(cache_dtype="fp8")
    [record] = parse_metrics(exposition(flavour, [state]).decode())
    assert record.model == state.model
    assert record.kv_usage_fraction == pytest.approx(0.42)
    assert record.kv_pool_tokens == 29750 * 16
    assert (record.requests_running, record.requests_waiting) == (12, 3)
    if flavour.startswith("vllm"):
        assert (record.block_size, record.cache_dtype, record.gpu_memory_utilization) == (16, "fp8", 0.9)
        assert record.preemptions_total == 7 and record.version_family == flavour[-2:]
        assert record.prefix_cache_hit_rate is None  # no queries yet: a rate of nothing is missing, not 0
    else:
        assert record.preemptions_total is None and record.block_size is None
        assert record.max_model_len is None  # SGLang 0.5.6 exports no context length: /v1/models gives it


def test_v0_has_cpu_cache_and_v1_does_not(llama) -> None:
    [v0] = parse_metrics(exposition("vllm-v0", [llama]).decode())
    [v1] = parse_metrics(exposition("vllm-v1", [llama]).decode())
    assert v0.cpu_cache_usage_fraction == 0.0 and v1.cpu_cache_usage_fraction is None


def test_engine_that_has_not_carved_its_pool_exports_none_blocks(make_engine) -> None:
    state = make_engine(phase="profiling", num_gpu_blocks=None, kv_usage_fraction=None, requests_running=None)
    [record] = parse_metrics(exposition("vllm-v1", [state]).decode())
    assert (record.num_gpu_blocks, record.kv_pool_tokens, record.kv_usage_fraction) == (None, None, None)
    assert record.requests_waiting == 3


def test_several_models_give_several_records(make_engine) -> None:
    qwen = make_engine(model="Qwen/Qwen2.5-7B-Instruct", kv_usage_fraction=0.1)
    records = parse_metrics(exposition("vllm-v1", [make_engine(), qwen]).decode())
    assert {r.model: r.kv_usage_fraction for r in records} == {
        "meta-llama/Llama-3.1-8B-Instruct": 0.42,
        "Qwen/Qwen2.5-7B-Instruct": 0.1,
    }


DATA_PARALLEL = """\
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 200.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 50.0
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="100"} 1.0
vllm:cache_config_info{block_size="32",engine="1",num_gpu_blocks="10"} 1.0
"""


def test_engine_label_values_give_one_record_each_with_their_own_pool() -> None:
    by_engine = {r.engine_index: r for r in parse_metrics(DATA_PARALLEL)}
    assert (by_engine["0"].kv_usage_fraction, by_engine["0"].kv_pool_tokens) == (0.25, 1600)
    assert (by_engine["1"].kv_usage_fraction, by_engine["1"].kv_pool_tokens) == (0.75, 320)
    assert (by_engine["0"].prefix_cache_hit_rate, by_engine["1"].prefix_cache_hit_rate) == (None, 0.25)


V1_080 = """\
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.5
vllm:num_requests_running{model_name="m"} 2.0
vllm:gpu_prefix_cache_queries_total{model_name="m"} 10.0
vllm:gpu_prefix_cache_hits_total{model_name="m"} 4.0
vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="100"} 1.0
"""


def test_old_v1_gauge_name_and_old_prefix_counters_are_understood() -> None:
    [record] = parse_metrics(V1_080)
    assert (record.version_family, record.kv_usage_fraction, record.prefix_cache_hit_rate) == ("v1", 0.5, 0.4)
    assert record.kv_pool_tokens == 1600 and record.requests_waiting is None


def test_both_usage_names_present_takes_the_new_one() -> None:
    both = (
        'vllm:kv_cache_usage_perc{model_name="m",engine="0"} 0.25\n'
        'vllm:gpu_cache_usage_perc{model_name="m",engine="0"} 0.3\n'
    )
    assert parse_metrics(both)[0].kv_usage_fraction == 0.25


def test_v0_prefix_hit_rate_gauge() -> None:
    text = 'vllm:gpu_cache_usage_perc{model_name="m"} 0.1\nvllm:gpu_prefix_cache_hit_rate{model_name="m"} 0.6\n'
    [record] = parse_metrics(text)
    assert (record.version_family, record.prefix_cache_hit_rate) == ("v0", 0.6)


def test_kv_cache_size_tokens_label_wins_over_blocks_times_block_size() -> None:
    text = (
        'vllm:kv_cache_usage_perc{model_name="m",engine="0"} 0.1\n'
        'vllm:cache_config_info{block_size="16",engine="0",kv_cache_size_tokens="123456",'
        'num_gpu_blocks="100"} 1\n'
    )
    assert parse_metrics(text)[0].kv_pool_tokens == 123456


LLAMACPP_OLD = """\
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.125
llamacpp:kv_cache_tokens 512
llamacpp:requests_processing 1
llamacpp:requests_deferred 0
"""
LLAMACPP_NEW = """\
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1000
llamacpp:requests_processing 2
llamacpp:requests_deferred 1
llamacpp:n_tokens_max 4096
"""


def test_llamacpp_old_and_new_metric_sets() -> None:
    [old] = parse_metrics(LLAMACPP_OLD)
    [new] = parse_metrics(LLAMACPP_NEW)
    assert (old.kv_usage_fraction, old.requests_running, old.notes) == (0.125, 1, [])
    assert (new.kv_usage_fraction, new.requests_running, new.requests_waiting) == (None, 2, 1)
    assert new.notes == [REMOVED_NOTE]


def test_tgi_pool_queue_and_no_usage_gauge() -> None:
    text = "tgi_batch_max_total_tokens 160000\ntgi_batch_current_size 4\ntgi_queue_size 9\n"
    [record] = parse_metrics(text)
    assert (record.engine, record.kv_pool_tokens, record.requests_running, record.requests_waiting) == (
        "tgi",
        160000,
        4,
        9,
    )
    assert record.kv_usage_fraction is None and record.notes
