"""The seeds' worked numbers for weights and KV cache, each checked to the precision the seed states."""

import pytest

from gpumem_tui.planner.kv import kv_bytes_per_token, kv_bytes_total
from gpumem_tui.planner.params import count_params
from gpumem_tui.planner.weights import format_bytes, weights_bytes
from gpumem_tui.units import GB, GIB, MIB, TB


def gb(n):
    return n / GB


def test_llama_31_70b_has_70_6_billion_parameters(catalog):
    assert round(count_params(catalog.model("llama-3.1-70b")).total / 1e9, 1) == 70.6


@pytest.mark.parametrize("fmt, seed_gb", [("bf16", 141.2), ("fp8", 70.6), ("int4", 39.7)])
def test_llama_31_70b_weights_by_format(catalog, fmt, seed_gb):
    """Second seed: 70.6 x 2 = 141.2 GB, x 1 = 70.6 GB, x 0.5625 = 39.7 GB (the seed rounds the count first)."""
    weights = weights_bytes(count_params(catalog.model("llama-3.1-70b")), catalog.format(fmt))
    assert gb(weights) == pytest.approx(seed_gb, abs=0.1)


def test_int4_counts_0_5625_bytes_per_parameter(catalog):
    assert catalog.format("int4").bits_per_param / 8 == 0.5625


@pytest.mark.parametrize("fmt, seed_gb", [("fp32", 280), ("bf16", 140), ("int8", 70), ("int4-raw", 35)])
def test_third_seed_70b_nominal_weights(catalog, fmt, seed_gb):
    """Third seed: a 70-billion-parameter model at 4 / 2 / 1 / 0.5 bytes."""
    assert format_bytes(70 * 10**9, catalog.format(fmt)) == seed_gb * GB


def test_llama_2_70b_fp16_is_140_gb(catalog):
    """First seed: 'Llama 2 70B at FP16: 140GB of weights' (2 GB per billion parameters)."""
    weights = weights_bytes(count_params(catalog.model("llama-2-70b")), catalog.format("fp16"))
    assert round(gb(weights) / 10) * 10 == 140


def test_deepseek_v3_fp8_is_about_671_gb_and_computes_like_37b(catalog):
    params = count_params(catalog.model("deepseek-v3"))
    assert round(gb(weights_bytes(params, catalog.format("fp8")))) == 671
    assert round(params.active / 1e9) in (37, 38)  # README says 37B activated; exact count 37.55B


@pytest.mark.parametrize("model, per_token", [("llama-3.1-8b", 131_072), ("llama-3.1-70b", 327_680)])
def test_kv_bytes_per_token(catalog, model, per_token):
    assert kv_bytes_per_token(catalog.model(model)) == per_token


def test_32_users_of_4000_tokens_on_70b_is_about_42_gb(catalog):
    kv = kv_bytes_total(catalog.model("llama-3.1-70b"), 32, 4000, "bf16")
    assert kv == 32 * 4000 * 327_680
    assert round(gb(kv)) == 42


def test_llama_3_70b_one_user_at_128k_is_42_9_gb(catalog):
    """First seed: 2 x 80 x 8 x 128 x 131,072 x 2 bytes = 42.9 GB."""
    assert gb(kv_bytes_total(catalog.model("llama-3-70b"), 1, 131_072, "bf16")) == pytest.approx(42.9, abs=0.05)


def test_8b_at_128k_is_about_17_gb(catalog):
    assert round(gb(kv_bytes_total(catalog.model("llama-3.1-8b"), 1, 131_072, "bf16"))) == 17


def test_no_gqa_simplification_and_what_gqa_saves(catalog):
    """Third seed: KV heads = attention heads gives 2.5 MB/token (it is 2.5 MiB), 80 GB per 32K-token user
    (80 GiB at 32,768 tokens), 800 for ten users, and about 1 TB with 140 GB of weights and 10 % on top.
    Grouped-query attention (8 KV heads instead of 64) cuts the cache 8 times."""
    model = catalog.model("llama-2-70b")
    mha = kv_bytes_per_token(model, "fp16", kv_heads=model.attention_heads)
    assert mha == 2.5 * MIB
    one_user = kv_bytes_total(model, 1, 32_768, "fp16", kv_heads=model.attention_heads)
    assert one_user == 80 * GIB
    ten_users = kv_bytes_total(model, 10, 32_768, "fp16", kv_heads=model.attention_heads)
    assert ten_users == 800 * GIB
    total = (140 * GB + ten_users) * 1.1
    assert total / TB == pytest.approx(1.0, abs=0.1)
    assert kv_bytes_total(model, 10, 32_768, "fp16") * 8 == ten_users


def test_fp8_kv_halves_the_cache(catalog):
    model = catalog.model("llama-3.1-70b")
    assert kv_bytes_per_token(model, "fp8") * 2 == kv_bytes_per_token(model, "bf16")


def test_deepseek_mla_caches_one_latent_without_the_kv_factor(catalog):
    """catalog notes: (512 + 64) x 2 bytes x 61 layers = 70,272 B/token in BF16."""
    assert kv_bytes_per_token(catalog.model("deepseek-v3"), "bf16") == 70_272


def test_sliding_window_layers_stop_at_the_window(catalog):
    """gpt-oss-120b: 18 full layers at 36,864 B/token, 18 sliding layers capped at 128 tokens (4.5 MiB)."""
    model = catalog.model("gpt-oss-120b")
    long = kv_bytes_total(model, 1, 100_000, "bf16")
    assert long == 100_000 * 36_864 + 4_718_592
    short = kv_bytes_total(model, 1, 100, "bf16")
    assert short == 100 * 73_728


def test_gemma_3_window_pattern_is_five_local_one_global(catalog):
    model = catalog.model("gemma-3-27b")
    assert model.sliding_layer_count() == 52 == sum(model.slides(i) for i in range(model.layers))
    assert not model.slides(5) and not model.slides(59) and model.slides(60)
