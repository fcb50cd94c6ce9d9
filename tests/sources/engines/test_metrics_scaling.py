"""Normalising /metrics costs O(series): each family is indexed once, records per payload are capped, and
no single line can make the parse slow. Counted in operations, never in wall-clock time."""

from __future__ import annotations

import pytest

from gpumem_tui.sources.engines.parse import parse_metrics
from gpumem_tui.sources.engines.prometheus import MAX_LINE, parse_families
from gpumem_tui.sources.engines.series import MAX_SERVED, SeriesReader

VLLM_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc")


def vllm_payload(models: int) -> str:
    lines = [
        f'{name}{{model_name="org/m-{i:05d}",engine="0"}} {0.5 if "perc" in name else i % 7}'
        for name in VLLM_GAUGES
        for i in range(models)
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def key_calls(monkeypatch) -> list[int]:
    """How many times a sample's labels are turned into a lookup key: the per-sample work."""
    calls = [0]
    original = SeriesReader.key

    def counting(self, labels):
        calls[0] += 1
        return original(self, labels)

    monkeypatch.setattr(SeriesReader, "key", counting)
    return calls


@pytest.mark.parametrize("models", [50, 600])
def test_each_sample_is_keyed_a_bounded_number_of_times(key_calls, models: int) -> None:
    records = parse_metrics(vllm_payload(models))
    samples = models * len(VLLM_GAUGES)
    assert len(records) == min(models, MAX_SERVED)
    assert key_calls[0] <= samples  # linear: once per sample (a scan per lookup was ~samples x records)


def test_index_is_built_once_per_family() -> None:
    families = parse_families(vllm_payload(200), VLLM_GAUGES)
    reader = SeriesReader(families, ("model_name", "engine"))
    for key in reader.keys(VLLM_GAUGES):
        for name in VLLM_GAUGES:
            reader.value(name, key)
    assert reader.index_builds == len(VLLM_GAUGES)


def test_thousands_of_vllm_models_are_capped_with_one_note() -> None:
    records = parse_metrics(vllm_payload(6000))
    assert len(records) == MAX_SERVED
    assert [r.model for r in records] == [f"org/m-{i:05d}" for i in range(MAX_SERVED)]
    assert "6,000 vLLM models reported; showing the first 64" in records[0].notes
    assert all("reported; showing" not in n for r in records[1:] for n in r.notes)


def test_sglang_cap_counts_models_not_ranks() -> None:
    lines = [
        f'sglang:token_usage{{model_name="m-{i:04d}",tp_rank="{rank}"}} 0.25'
        for i in range(MAX_SERVED + 36)
        for rank in (0, 1)
    ]
    records = parse_metrics("\n".join(lines) + "\n")
    assert len(records) == MAX_SERVED
    assert len({r.model for r in records}) == MAX_SERVED
    assert f"{MAX_SERVED + 36} SGLang models reported; showing the first {MAX_SERVED}" in records[0].notes


def test_few_models_have_no_cap_note() -> None:
    records = parse_metrics(vllm_payload(MAX_SERVED))
    assert len(records) == MAX_SERVED
    assert not any("showing the first" in n for r in records for n in r.notes)


def test_a_line_longer_than_any_engine_writes_is_skipped_with_a_note() -> None:
    long = 'vllm:num_requests_running{model_name="' + "x" * MAX_LINE + '",engine="0"} 3\n'
    text = vllm_payload(2) + long
    records = parse_metrics(text)
    assert len(records) == 2
    assert "x" * 100 not in "".join(r.model or "" for r in records)
    assert any("1 metrics line(s) over 16 KiB skipped" in n for n in records[0].notes)


def test_cache_info_is_matched_per_engine_label() -> None:
    info = "".join(
        f'vllm:cache_config_info{{engine="{e}",block_size="{16 * (e + 1)}",num_gpu_blocks="100"}} 1\n' for e in range(3)
    )
    gauges = "".join(f'vllm:num_requests_running{{model_name="m",engine="{e}"}} 1\n' for e in range(3))
    records = parse_metrics(info + gauges)
    assert [(r.engine_index, r.block_size) for r in records] == [("0", 16), ("1", 32), ("2", 48)]
