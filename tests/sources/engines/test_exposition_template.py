"""A simulated engine's /metrics body is prometheus_client's text, written from a template per shape."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from gpumem_tui.demo import engine_exposition
from gpumem_tui.demo.engine_exposition import exposition, registry

FLAVOURS = ["vllm-v1", "vllm-v0", "sglang"]


def _without_created(body: bytes) -> str:
    """The text less its `_created` series: prometheus_client stamps each with the moment it was made."""
    return "\n".join(line for line in body.decode().split("\n") if "_created" not in line)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(
    "case",
    ["one", "two models", "one model twice", "nothing measured", "not carved", "odd model name", "none serving"],
)
def test_each_body_is_what_prometheus_client_writes_for_the_same_engines(flavour, case, make_engine) -> None:
    engines = {
        "one": [make_engine()],
        "two models": [make_engine(), make_engine(model="Qwen/Qwen2.5-7B", kv_usage_fraction=0.125)],
        "one model twice": [make_engine(), make_engine(requests_running=40, preemptions_total=5)],
        "nothing measured": [
            make_engine(kv_usage_fraction=None, requests_running=None, requests_waiting=None, preemptions_total=None)
        ],
        "not carved": [make_engine(num_gpu_blocks=None, kv_pool_tokens=None)],
        "odd model name": [make_engine(model='50% "odd" \\ model\nname 7.000000001e+09')],
        "none serving": [],
    }[case]
    expected = generate_latest(registry(flavour, engines))
    assert _without_created(exposition(flavour, engines)) == _without_created(expected)


def test_a_template_is_written_once_per_shape_and_only_values_change(make_engine, monkeypatch) -> None:
    """Values alone (the load of a running engine) reuse the shape's template; a series that appears or a label
    that changes (a pool carved) is another shape."""
    written: list[object] = []

    def counted(out):
        written.append(out)
        return generate_latest(out)

    engine_exposition._template.cache_clear()
    monkeypatch.setattr(engine_exposition, "generate_latest", counted)
    busy, busier = make_engine(requests_running=3), make_engine(requests_running=60, kv_usage_fraction=0.97)
    first, second = exposition("vllm-v1", [busy]), exposition("vllm-v1", [busier])
    assert len(written) == 1 and first != second
    assert b'vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 60.0\n' in second
    exposition("vllm-v1", [make_engine(kv_usage_fraction=None)])
    exposition("vllm-v1", [make_engine(num_gpu_blocks=123)])
    assert len(written) == 3
