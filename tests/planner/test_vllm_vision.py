"""Issue 15, term 3: a multimodal checkpoint's vision tower, its RoPE caches and the encoder's dummy inputs,
as vLLM 0.19.0 loads and profiles them (planner/vllm/vision.py cites the source lines)."""

import pytest

from gpumem_tui.catalog.schema import VisionSpec
from gpumem_tui.planner.dtypes import PlanInputError
from gpumem_tui.planner.vllm import EngineSettings, predict
from gpumem_tui.planner.vllm.vision import mm_limits
from gpumem_tui.units import GIB

# SigLIP so400m as Gemma 3 configures it (vision_config: hidden 1152, intermediate 4304, 27 layers, 896 px
# images in 14 px patches), counted weight by weight as vLLM's siglip.py builds it.
SIGLIP_LAYER = 4 * (1152 * 1152 + 1152) + (1152 * 4304 + 4304) + (4304 * 1152 + 1152) + 2 * 2 * 1152
SIGLIP = 27 * SIGLIP_LAYER + (3 * 14 * 14 * 1152 + 1152) + (896 // 14) ** 2 * 1152 + 2 * 1152


def _gemma_12b(catalog, version: str = "0.19.0", **flags) -> EngineSettings:
    """The DEV startup: google/gemma-3-12b-it on one H100, vLLM 0.19.0, utilization 0.95, 8,192 tokens."""
    return EngineSettings(
        model=catalog.model("google/gemma-3-12b-it"),
        gpu=catalog.gpu("h100"),
        version=version,
        utilization=0.95,
        max_model_len=8192,
        **flags,
    )


def test_the_tower_and_projector_are_counted_in_weights(catalog):
    """Tower + Gemma3MultiModalProjector (1152 x 3840 projection and a 1152 norm), in bf16."""
    p = predict(_gemma_12b(catalog))
    assert p.terms["vision_tower"] == (SIGLIP + 1152 * 3840 + 1152) * 2


def test_linear_rope_builds_a_scaled_global_cache_and_a_local_one(catalog):
    """131,072 positions x 8 for the global layers, 131,072 for the local ones, 256 wide, in bf16."""
    p = predict(_gemma_12b(catalog))
    assert p.terms["rope_cache"] == (131072 * 8 + 131072) * 256 * 2


def test_encoder_dummy_images_stay_alive_through_the_peak(catalog):
    """8,192 batched tokens // 256 tokens an image = 32 dummy images ('profiled with 32 image items'): their
    pixel values (3 x 896 x 896) and encoder outputs (256 x 3840), in bf16, on top of the LM's peak."""
    p = predict(_gemma_12b(catalog))
    assert p.terms["encoder_profile"] == 32 * (3 * 896 * 896 + 256 * 3840) * 2
    text_only = predict(_gemma_12b(catalog, limit_mm_per_prompt={"image": 0}))
    assert p.activation_peak_bytes - text_only.activation_peak_bytes == p.terms["encoder_profile"]


def test_limit_zero_for_every_modality_loads_no_tower_and_profiles_no_encoder(catalog):
    with_tower = predict(_gemma_12b(catalog))
    text_only = predict(_gemma_12b(catalog, limit_mm_per_prompt={"image": 0}))
    assert "vision_tower" not in text_only.terms and "encoder_profile" not in text_only.terms
    assert with_tower.weights_bytes - text_only.weights_bytes == with_tower.terms["vision_tower"]
    assert text_only.terms["rope_cache"] == with_tower.terms["rope_cache"]  # the language model's own
    assert predict(_gemma_12b(catalog, limit_mm_per_prompt={"image": 2})).terms == with_tower.terms


def test_the_dev_startup_is_predicted_within_its_tolerances(catalog):
    """google-gemma-3-12b-it--h100-80gb--tp1pp1dp1--8192 of the llm-d planner's v0.19.0 sweep
    (https://github.com/llm-d-incubation/llm-d-planner/blob/d3121e059da88662db39a926a3ead964be97359b/accuracy/
    results/v0.19.0/runs/google-gemma-3-12b-it--h100-80gb--tp1pp1dp1--8192.json): weights 23.31 GiB,
    activation 3.94 GiB, KV cache 47.72 GiB. Weights within 0.5 %, KV within max(3 %, 0.3 GiB)."""
    p = predict(_gemma_12b(catalog))
    assert p.weights_bytes / GIB == pytest.approx(23.31, rel=0.005)
    assert abs(p.kv_cache_bytes / GIB - 47.72) <= max(0.03 * 47.72, 0.3)


@pytest.mark.parametrize(
    "text, limits",
    [
        ('{"image": 0}', {"image": 0}),
        ('{"image": {"count": 0, "width": 512}, "video": 1}', {"image": 0, "video": 1}),
        ("{'image': 0}", {"image": 0}),  # as a log's non-default args print the dict
    ],
)
def test_the_flag_is_read_in_the_spellings_vllm_accepts(text, limits):
    assert mm_limits(text) == limits


@pytest.mark.parametrize("text", ["{image:0", "[1, 2]", '{"image": -1}', '{"image": "none"}', '{"image": true}'])
def test_a_bad_flag_is_one_clear_error(text):
    with pytest.raises(PlanInputError, match="--limit-mm-per-prompt"):
        mm_limits(text)


def test_before_0_15_a_limit_of_zero_still_loads_the_tower(catalog):
    """0.12-0.14 build Gemma 3's tower unconditionally (gemma3_mm.py:525 at 0.14.0); 0.15 marks it skippable."""
    old = predict(_gemma_12b(catalog, version="0.14.0", limit_mm_per_prompt={"image": 0}))
    assert "vision_tower" in old.terms and "encoder_profile" not in old.terms
    assert "vision_tower" not in predict(_gemma_12b(catalog, version="0.15.0", limit_mm_per_prompt={"image": 0})).terms


def test_a_release_whose_source_was_not_read_says_so(catalog):
    p = predict(_gemma_12b(catalog, version="0.11.0"))
    assert any("vision tower" in line and "not read" in line for line in p.assumed)
    assert not any("vision" in line for line in predict(_gemma_12b(catalog, version="0.33.0")).assumed)


def test_a_tower_of_unknown_size_is_said_not_counted(catalog):
    """A config.json whose tower the reader does not size (`VisionSpec()`): no term, one assumed line."""
    spec = catalog.model("google/gemma-3-12b-it").model_copy(update={"vision": VisionSpec(), "id": "lab/new\x1b-vlm"})
    p = predict(_gemma_12b(catalog).model_copy(update={"model": spec}))
    assert "vision_tower" not in p.terms and "encoder_profile" not in p.terms
    assert "lab/new\\x1b-vlm's vision tower is not counted: the catalog does not know its size" in p.assumed


def _kimi_vl(catalog, **flags) -> EngineSettings:
    """moonshotai/Kimi-VL-A3B-Instruct as the llm-d sweep starts it: one H100, vLLM 0.19.0, utilization 0.95,
    8,192 tokens (its startups are held out: only the settings are used here)."""
    return EngineSettings(
        model=catalog.model("moonshotai/Kimi-VL-A3B-Instruct"),
        gpu=catalog.gpu("h100"),
        version="0.19.0",
        utilization=0.95,
        max_model_len=8192,
        **flags,
    )


def test_moonvit_keeps_its_rope_table_through_the_peak(catalog):
    """Kimi-VL's encoder profile: 8,192 batched tokens // 1,089 tokens an image = 7 dummy images, their pixel
    values (66 x 66 patches of 3 x 14 x 14) and outputs (1,089 x 2,048) in bf16, and MoonViT's 2-D RoPE table,
    a cached property the first encode builds on the GPU and keeps (moonvit.py Rope2DPosEmb:
    512 x 512 x 36 complex64, whatever the model dtype)."""
    p = predict(_kimi_vl(catalog))
    table = 512 * 512 * 36 * 8
    assert p.terms["encoder_profile"] == 7 * (66 * 66 * 3 * 14 * 14 + 1089 * 2048) * 2 + table
    text_only = predict(_kimi_vl(catalog, limit_mm_per_prompt={"image": 0}))
    assert "encoder_profile" not in text_only.terms
    assert p.activation_peak_bytes - text_only.activation_peak_bytes == p.terms["encoder_profile"]


def test_kimi_vl_loads_moonvit_and_its_projector_beside_the_deepseek_text_model(catalog):
    p = predict(_kimi_vl(catalog))
    assert p.terms["vision_tower"] == 447_545_840 * 2
    assert p.block_size == 16  # MLA on Hopper: FLASH_ATTN_MLA's 16-token blocks


def test_at_tp_2_each_rank_holds_moonvits_replicated_parts_whole(catalog):
    """MoonViT's linears are TP-parallel (moonvit.py MLP2, wqkv, wo) but its patch conv, 64 x 64 position
    embedding, LayerNorms and row-parallel biases are whole on each rank, and KimiVLMultiModalProjector is
    ReplicatedLinear (kimi_vl.py:94-126): each of 2 ranks holds half the rest and all of these."""
    replicated = (
        (3 * 14 * 14 * 1152 + 1152)  # patch conv
        + 64 * 64 * 1152  # learned position embedding
        + 27 * (4 * 1152 + 2 * 1152)  # norm0, norm1; wo and fc1 biases
        + 2 * 1152  # final LayerNorm
        + 2 * 1152
        + (4608 * 4608 + 4608)
        + (4608 * 2048 + 2048)  # the projector
    )
    p = predict(_kimi_vl(catalog).model_copy(update={"tp": 2}))
    assert p.terms["vision_tower"] == (447_545_840 - replicated) * 2 // 2 + replicated * 2
    assert not any("split evenly" in line for line in p.assumed)
