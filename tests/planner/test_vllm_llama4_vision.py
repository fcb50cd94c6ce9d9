"""Llama 4 Scout's vision model (issue 15, term 3) as vLLM 0.19.0 loads and profiles it
(models/mllama4.py), pinned on the DEV startup of the llm-d planner's sweep:
https://github.com/llm-d-incubation/llm-d-planner/blob/d3121e059da88662db39a926a3ead964be97359b/accuracy/results/
v0.19.0/logs/meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192.log (4 x H100, TP 4, bf16, utilization 0.95,
8,192 tokens): weights 53.12 GiB, activation 3.19 GiB, KV cache 16.75 GiB, 91,495 blocks, and "Encoder cache will
be initialized with a budget of 8192 tokens, and profiled with 3 image items of the maximum feature size"."""

import pytest

from gpumem_tui.planner.vllm import EngineSettings, predict
from gpumem_tui.units import GIB
from tests.catalog.test_hfconfig_vision import LLAMA4_PROJECTOR, LLAMA4_TOWER


def _scout(catalog, **flags) -> EngineSettings:
    return EngineSettings(
        model=catalog.model("meta-llama/Llama-4-Scout-17B-16E-Instruct"),
        gpu=catalog.gpu("h100"),
        version="0.19.0",
        tp=4,
        utilization=0.95,
        max_model_len=8192,
        **flags,
    )


def test_the_tower_is_split_over_the_tp_ranks(catalog):
    """Its linear layers are column/row parallel (mm_encoder_tp_mode 'weights', the default)."""
    p = predict(_scout(catalog))
    assert p.terms["vision_tower"] == -(-(LLAMA4_TOWER + LLAMA4_PROJECTOR) * 2 // 4)


def test_three_dummy_images_stay_alive_through_the_peak(catalog):
    """8,192 // 2,448 = 3 images, as the log says: 17 tiles of 3 x 336 x 336 pixels and 2,448 embeddings of
    the text width 5,120 each (the projector gathers its output on every rank), in bf16."""
    p = predict(_scout(catalog))
    assert p.terms["encoder_profile"] == 3 * (17 * 3 * 336 * 336 + 2448 * 5120) * 2


def test_the_dev_startup(catalog):
    """Without the vision model the weights were 0.43 GiB low and the KV pool 3.6 % high. Now the activation
    is within 0.01 GiB; the weights within 0.03 GiB (0.02 GiB per rank is not explained by the read source);
    the KV pool, which also carries the flat 2.10 GiB non-torch figure against the log's 2.17, within 1 %."""
    p = predict(_scout(catalog))
    assert p.weights_bytes / GIB == pytest.approx(53.12, abs=0.03)
    assert p.activation_peak_bytes / GIB == pytest.approx(3.19, abs=0.01)
    assert p.kv_cache_bytes / GIB == pytest.approx(16.75, rel=0.01)
    assert p.num_gpu_blocks == pytest.approx(91495, rel=0.01)


def test_limit_zero_images_loads_no_vision_model(catalog):
    """--limit-mm-per-prompt '{"image": 0}': no tower, no encoder profile, the KV pool grows by both."""
    full, text_only = predict(_scout(catalog)), predict(_scout(catalog, limit_mm_per_prompt={"image": 0}))
    assert "vision_tower" not in text_only.terms and "encoder_profile" not in text_only.terms
    grown = full.terms["vision_tower"] + full.terms["encoder_profile"]
    assert text_only.kv_cache_bytes - full.kv_cache_bytes == grown
