"""vLLM sizing term 4: MXFP4 experts as the Triton kernel lays them out on Hopper (padded values and
scales, the original scales kept, fp32 biases) and gpt-oss's fp32 RoPE cache."""

import pytest

from gpumem_tui.planner.vllm import EngineSettings, predict
from gpumem_tui.units import GIB

# llm-d planner accuracy sweep, vLLM v0.19.0, openai/gpt-oss-20b on 2 x H100-80GB, max_model_len 8192,
# gpu_memory_utilization 0.9: "Model loading took 7.01 GiB memory" (github.com/llm-d-incubation/llm-d-planner
# at d3121e059da88662db39a926a3ead964be97359b, accuracy/results/v0.19.0/logs/
# openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192.log).
OSS20_TP2_H100_WEIGHTS_GIB = 7.01


def oss20(catalog, gpu="h100", version="0.19.0", tp=2):
    return predict(
        EngineSettings(
            model=catalog.model("openai/gpt-oss-20b"),
            gpu=catalog.gpu(gpu),
            version=version,
            tp=tp,
            max_model_len=8192,
            utilization=0.9,
        )
    )


def test_hopper_layout_of_gpt_oss_20b_at_tp_2_by_hand(catalog):
    """E 32 experts, hidden 2880, intermediate 2880 / TP 2 = 1440 rounded up to 64 = 1472 (oracle/mxfp4.py:399).
    w13 values (E, 2880/2, 2*1472) and w2 values (E, 1472/2, 2880) padded to 64 on both dims (hopper_value.py:
    130-134); scales (E, 2*1472, 2880/32) and (E, 2880, 1472/32) kept as loaded plus a swizzled copy whose rows
    pad to 256 (hopper_scale.py:30-34); fp32 biases (E, 2*1472) and (E, 2880) (oracle/mxfp4.py:725)."""
    values = 32 * 1472 * 2944 + 32 * 768 * 2880
    kept_scales = 32 * 2944 * 90 + 32 * 2880 * 46
    swizzled_scales = 32 * 3072 * 90 + 32 * 3072 * 46
    biases = 4 * 32 * (2944 + 2880)
    layer = values + kept_scales + swizzled_scales + biases
    # What the plain count holds for the same experts: 4.25 bits for weights and biases of one rank.
    plain = (32 * 3 * 2880 * 2880 + 32 * (2 * 2880 + 2880)) / 2 * 4.25 / 8
    p = oss20(catalog)
    assert p.terms["mxfp4_layout"] == round(24 * (layer - plain))


def test_gpt_oss_20b_weights_at_tp_2_on_hopper_match_the_log(catalog):
    """With the layout and the fp32 RoPE cache (models/gpt_oss.py:85) the weights land within 0.5 %."""
    p = oss20(catalog)
    assert p.weights_bytes / GIB == pytest.approx(OSS20_TP2_H100_WEIGHTS_GIB, rel=0.005)


def test_gpt_oss_rope_cache_is_fp32(catalog):
    """131072 positions x 64 rotary dims x 4 bytes, where a 16-bit cache would take 2."""
    from gpumem_tui.planner.vllm.vision import rope_cache_bytes

    assert rope_cache_bytes(catalog.model("openai/gpt-oss-20b"), 2) == 131072 * 64 * 4
    assert rope_cache_bytes(catalog.model("meta-llama/Llama-3.1-8B-Instruct"), 2) == 131072 * 128 * 2


def test_other_generations_keep_the_plain_count_and_say_it_is_assumed(catalog):
    """Blackwell picks FlashInfer's TRT-LLM kernel with its own shuffled layout, Ampere Marlin: not modelled."""
    for gpu in ("b200", "a100"):
        p = oss20(catalog, gpu=gpu)
        assert "mxfp4_layout" not in p.terms
        assert any("MXFP4" in note and "assumed" in note for note in p.assumed)


def test_an_unread_release_takes_the_nearest_read_one_s_layout_and_says_so(catalog):
    p = oss20(catalog, version="0.11.0")
    assert p.terms["mxfp4_layout"] == oss20(catalog, version="0.12.0").terms["mxfp4_layout"]
    assert any("MXFP4" in note and "0.11" in note and "assumed" in note for note in p.assumed)
    assert (
        oss20(catalog, version="0.28.0").terms["mxfp4_layout"] == oss20(catalog, version="0.25.0").terms["mxfp4_layout"]
    )
    for read in ("0.12.0", "0.16.0", "0.19.0", "0.22.0", "0.25.0", "0.33.0"):
        assert not any("MXFP4" in note for note in oss20(catalog, version=read).assumed)


# vLLM 0.14.1, openai/gpt-oss-120b on one H100, "Using Triton backend": "Model loading took 64.38 GiB memory"
# (https://github.com/vllm-project/vllm/issues/33155, the log in its description).
OSS120_TP1_H100_WEIGHTS_GIB_0_14 = 64.38


def test_before_0_17_the_values_pad_only_to_the_mma_tiles_and_gpt_oss_120b_matches_0_14(catalog):
    """0.12-0.16 and from 0.22 the value layout pads N to 16 and K/2 to 32, its mma packing (hopper_value.py
    swizzle_data: k_tile x warp_tile x threads x scott_trick x contig per dim); 0.17-0.21 pad both to 64 first.
    gpt-oss-120b at TP 1 (K/2 = 1440, N = 5760 and 2880) needs no tile padding, and 0.14 lands on the log."""
    p = predict(
        EngineSettings(
            model=catalog.model("openai/gpt-oss-120b"), gpu=catalog.gpu("h100"), version="0.14.0", max_model_len=8192
        )
    )
    assert p.weights_bytes / GIB == pytest.approx(OSS120_TP1_H100_WEIGHTS_GIB_0_14, rel=0.005)
    values_0_19 = 32 * 1472 * 2944 + 32 * 768 * 2880
    values_0_14 = 32 * 1440 * 2944 + 32 * 736 * 2880  # 20b at TP 2: 2944, 1440, 2880 and 736 fit the tiles
    assert oss20(catalog).terms["mxfp4_layout"] - oss20(catalog, version="0.14.0").terms["mxfp4_layout"] == 24 * (
        values_0_19 - values_0_14
    )
    assert (
        oss20(catalog, version="0.22.0").terms["mxfp4_layout"] == oss20(catalog, version="0.14.0").terms["mxfp4_layout"]
    )


def test_from_0_25_the_loaded_scales_are_freed_and_0_33_pads_scale_groups_to_4(catalog):
    """0.25 deletes w13/w2_weight_scale once swizzled (fused_moe/oracle/mxfp4.py: 'drop the now-dead
    weight/scale Parameters'); 0.33 pads the scale groups to a multiple of 4 on Hopper (mxfp4_utils.py,
    'pad K (num scale groups) to 0 mod 4'): 46 groups of w2 become 48 in 3072 swizzled rows."""
    kept_scales = 32 * 2944 * 90 + 32 * 2880 * 46
    assert (
        oss20(catalog, version="0.24.0").terms["mxfp4_layout"] - oss20(catalog, version="0.25.0").terms["mxfp4_layout"]
        == 24 * kept_scales
    )
    assert oss20(catalog, version="0.33.0").terms["mxfp4_layout"] - oss20(catalog, version="0.25.0").terms[
        "mxfp4_layout"
    ] == 24 * 32 * 3072 * (92 - 90 + 48 - 46)
