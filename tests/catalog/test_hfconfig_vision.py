"""config.json of a multimodal checkpoint (issue 15, term 3): the reader counts the vision tower from
`vision_config` as vLLM 0.19.0 builds it, and the RoPE caches the language model makes."""

import json

import pytest

from gpumem_tui.catalog.hfconfig import model_from_config
from gpumem_tui.catalog.loader import CatalogError
from tests.datafiles import HUB_CONFIGS

# SigLIP as vLLM's siglip.py builds it for hidden 1152, intermediate 4304, 27 layers, 896 px in 14 px
# patches: per layer q/k/v/out with biases, fc1/fc2 with biases, two LayerNorms; patch conv with bias,
# 64 x 64 position embeddings, the post LayerNorm. Gemma3MultiModalProjector: 1152 x 3840 and a 1152 norm.
LAYER = 4 * (1152 * 1152 + 1152) + (1152 * 4304 + 4304) + (4304 * 1152 + 1152) + 4 * 1152
TOWER = 27 * LAYER + (3 * 14 * 14 * 1152 + 1152) + 64 * 64 * 1152 + 2 * 1152


def read(name: str) -> dict:
    return json.loads((HUB_CONFIGS / name).read_text())


def test_gemma_3_vision_config_counts_siglip_and_the_projector(catalog):
    spec, warnings = model_from_config(read("gemma-3-12b-it.json"), "google/gemma-3-12b-it")
    assert spec.vision is not None
    assert spec.vision.params == TOWER + 1152 * 3840 + 1152 == 421_290_864
    assert (spec.vision.tokens_per_image, spec.vision.pixels_per_image) == (256, 3 * 896 * 896)
    assert spec.rope_caches == [8.0, 1.0]  # linear x8 for the global layers, a plain local one
    assert warnings == []
    entry = catalog.model("google/gemma-3-12b-it")
    assert spec.vision.model_copy(update={"sources": []}) == entry.vision.model_copy(update={"sources": []})
    assert spec.rope_caches == entry.rope_caches and spec.max_context == entry.max_context


def test_text_only_gemma_3_builds_two_plain_rope_caches():
    """Gemma 3 1B (gemma3_text, no rope_scaling): the local layers' base still makes its own cache."""
    config = {k: v for k, v in read("gemma-3-12b-it.json")["text_config"].items() if k != "rope_scaling"}
    spec, _ = model_from_config(config, "google/gemma-3-1b-it")
    assert spec.rope_caches == [1.0, 1.0] and spec.vision is None


def test_an_unknown_tower_is_said_not_counted():
    config = read("gemma-3-12b-it.json")
    config["vision_config"] = {"model_type": "brand_new_vit", "hidden_size": 1024}
    spec, warnings = model_from_config(config, "lab/new-vlm")
    assert spec.vision is not None and spec.vision.params is None
    assert any("brand_new_vit" in w and "not counted" in w for w in warnings)


# Pixtral as vLLM 0.19.0 builds it for Mistral Small 3.1 (models/pixtral.py, mistral3.py): per layer q/k/v/o
# and gate/up/down without biases and two RMSNorms; the patch convolution without bias and ln_pre. The
# projector: an RMSNorm, the 2 x 2 patch merger (4096 -> 1024) and two linears 1024 -> 5120 -> 5120, no bias.
PIXTRAL_LAYER = 4 * 1024 * 1024 + 3 * 1024 * 4096 + 2 * 1024
PIXTRAL = 24 * PIXTRAL_LAYER + 3 * 14 * 14 * 1024 + 1024
PIXTRAL_PROJECTOR = 1024 + 4 * 1024 * 1024 + 1024 * 5120 + 5120 * 5120


def test_mistral_small_3_1_counts_pixtral_and_its_projector(catalog):
    spec, warnings = model_from_config(read("Mistral-Small-3.1-24B-Instruct-2503.json"), "mistral-small-3.1")
    assert spec.vision is not None and spec.vision.params == PIXTRAL + PIXTRAL_PROJECTOR == 438_958_080
    # 1540 px in 14 px patches merged 2 x 2: 55 x 55 image embeddings (the row breaks are text tokens)
    assert (spec.vision.tokens_per_image, spec.vision.pixels_per_image) == (55 * 55, 3 * 1540 * 1540)
    assert warnings == [] and spec.rope_caches == [1.0]
    entry = catalog.model("mistralai/Mistral-Small-3.1-24B-Instruct-2503")
    assert spec.vision.model_copy(update={"sources": []}) == entry.vision.model_copy(update={"sources": []})


# Kimi-VL (vLLM 0.19.0 models/kimi_vl.py, moonvit.py): MoonViT's layers are SigLIP's in shape (norm0/norm1
# LayerNorms, wqkv and wo with biases, fc0/fc1 with biases), its patch conv has a bias, its learned position
# embedding is 64 x 64 (init_pos_emb_height/width), then a final LayerNorm. KimiVLMultiModalProjector: a
# LayerNorm of 1152, linear_1 4608 -> 4608 and linear_2 4608 -> 2048, both with biases.
MOONVIT = 27 * LAYER + (3 * 14 * 14 * 1152 + 1152) + 64 * 64 * 1152 + 2 * 1152
KIMI_PROJECTOR = 2 * 1152 + (4608 * 4608 + 4608) + (4608 * 2048 + 2048)


def test_kimi_vl_reads_its_deepseek_text_config_and_counts_moonvit(catalog):
    spec, warnings = model_from_config(read("Kimi-VL-A3B-Instruct.json"), "moonshotai/Kimi-VL-A3B-Instruct")
    assert warnings == []
    assert spec.mla is not None and spec.mla.kv_lora_rank == 512 and spec.mla.q_lora_rank is None
    assert spec.moe is not None
    assert (spec.moe.experts, spec.moe.experts_per_token, spec.moe.shared_experts) == (64, 6, 2)
    assert (spec.moe.first_dense_layers, spec.moe.router_bias) == (1, True)
    assert spec.vision is not None and spec.vision.params == MOONVIT + KIMI_PROJECTOR == 447_545_840
    # The dummy image is 1024 x 1024 (kimi_vl.py MaxImageTokenMeta); (1024 // 14)^2 = 5329 patches is over
    # in_token_limit 4096, so it is scaled by sqrt(4096 / 5329) to 897 px and padded to 924 = 33 x 28:
    # 66 x 66 patches of 3 x 14 x 14 values, merged 2 x 2 into 33 x 33 = 1089 embeddings.
    assert (spec.vision.tokens_per_image, spec.vision.pixels_per_image) == (33 * 33, 66 * 66 * 3 * 14 * 14)
    # MoonViT's 2-D RoPE table: 512 x 512 positions x 36 complex64 (8 bytes), built on the first encode.
    assert spec.vision.encoder_buffer_bytes == 512 * 512 * (1152 // 16 // 2) * 8
    entry = catalog.model("moonshotai/Kimi-VL-A3B-Instruct")
    assert spec.vision.model_copy(update={"sources": []}) == entry.vision.model_copy(update={"sources": []})
    assert spec.model_copy(update={"id": entry.id, "aliases": [], "sources": [], "notes": "", "vision": None}) == (
        entry.model_copy(
            update={"aliases": [], "sources": [], "notes": "", "vision": None, "params_total_published": None}
        )
    )


def test_kimi_vl_text_config_with_its_own_model_type_reads_the_same():
    config = read("Kimi-VL-A3B-Instruct.json")
    config["text_config"]["model_type"] = "deepseek_v3"
    spec, warnings = model_from_config(config, "kimi")
    plain, _ = model_from_config(read("Kimi-VL-A3B-Instruct.json"), "kimi")
    assert warnings == [] and spec == plain


# granite-vision (vLLM 0.19.0 models/llava_next.py, llava.py, siglip.py): SigLIP built up to the deepest of
# vision_feature_layer [-24, -20, -12, -1] (all 27 layers), without its post LayerNorm (require_post_norm
# False) or pooling head, 27 x 27 position embeddings for 384 px; LlavaMultiModalProjector 4 x 1152 -> 2048
# -> 2048 with biases; image_newline, one text-hidden vector.
GRANITE_SIGLIP = 27 * LAYER + (3 * 14 * 14 * 1152 + 1152) + 27 * 27 * 1152
GRANITE_PROJECTOR = (4 * 1152 * 2048 + 2048) + (2048 * 2048 + 2048) + 2048


def test_granite_vision_counts_siglip_to_its_deepest_feature_layer_and_the_llava_next_projector(catalog):
    spec, warnings = model_from_config(read("granite-vision-3.3-2b.json"), "ibm-granite/granite-vision-3.3-2b")
    assert warnings == []
    assert (spec.layers, spec.hidden_size, spec.kv_heads, spec.tie_word_embeddings) == (40, 2048, 8, True)
    assert spec.vision is not None and spec.vision.params == GRANITE_SIGLIP + GRANITE_PROJECTOR == 426_622_576
    # The largest pinpoint, 3840 high x 384 wide, is 10 x 1 tiles of 27 x 27 features, a newline per feature
    # row (270), and the base image's 729 features less the one `default` selection drops: 8288 embeddings.
    # Its pixel values are the 10 tiles and the resized base image, each 3 x 384 x 384.
    assert spec.vision.tokens_per_image == 10 * 729 + 10 * 27 + 728
    assert spec.vision.pixels_per_image == 11 * 3 * 384 * 384
    entry = catalog.model("ibm-granite/granite-vision-3.3-2b")
    assert spec.vision.model_copy(update={"sources": []}) == entry.vision.model_copy(update={"sources": []})


def test_granite_vision_largest_image_follows_its_pinpoints():
    config = read("granite-vision-3.3-2b.json")
    config["image_grid_pinpoints"] = [[384, 768], [768, 768]]
    config["vision_feature_select_strategy"] = "full"
    spec, _ = model_from_config(config, "granite-vision-small-grid")
    assert spec.vision is not None
    # 768 x 768: 2 x 2 tiles, 54 rows of newlines, the base image's 729 features.
    assert spec.vision.tokens_per_image == 4 * 729 + 54 + 729
    assert spec.vision.pixels_per_image == 5 * 3 * 384 * 384


def test_each_tower_says_which_of_its_parameters_every_tp_rank_holds_whole():
    """Kimi-VL: MoonViT's patch conv, position embedding, LayerNorms, row-parallel biases and the
    ReplicatedLinear projector. granite-vision: SigLIP's patch conv, position embedding, LayerNorms and
    row-parallel biases, the projector's linear_2 bias and image_newline (siglip.py:285-470, llava.py:128-160)."""
    kimi, _ = model_from_config(read("Kimi-VL-A3B-Instruct.json"), "kimi")
    granite, _ = model_from_config(read("granite-vision-3.3-2b.json"), "granite-vision")
    assert kimi.vision is not None and granite.vision is not None
    assert kimi.vision.replicated_params == 678_528 + 4_718_592 + 27 * 6 * 1152 + 2 * 1152 + KIMI_PROJECTOR
    assert granite.vision.replicated_params == 678_528 + 27 * 27 * 1152 + 27 * 6 * 1152 + 2048 + 2048


@pytest.mark.parametrize(
    "key, value, named",
    [
        ("image_grid_pinpoints", [384], "image_grid_pinpoints"),
        ("image_grid_pinpoints", [[384, 384, 384]], "image_grid_pinpoints"),
        ("image_grid_pinpoints", "anyres", "image_grid_pinpoints"),
        ("image_grid_pinpoints", [[100, 384]], "image_grid_pinpoints"),
        ("vision_feature_layer", [-40], "vision_feature_layer"),
        ("vision_feature_layer", "last", "vision_feature_layer"),
    ],
)
def test_a_bad_llava_next_key_is_one_clear_error(key, value, named):
    config = read("granite-vision-3.3-2b.json")
    config[key] = value
    with pytest.raises(CatalogError, match=named):
        model_from_config(config, "bad")


def test_a_bad_merge_kernel_is_one_clear_error():
    config = read("Kimi-VL-A3B-Instruct.json")
    config["vision_config"]["merge_kernel_size"] = "2x2"
    with pytest.raises(CatalogError, match="merge_kernel_size"):
        model_from_config(config, "bad")


# Llama 4's vision model as vLLM 0.19.0 builds it for Scout (models/mllama4.py): 34 layers of hidden 1408 with
# q/k/v/o and fc1/fc2 (5632), all with biases, and two LayerNorms; the unfold-convolution linear 588 -> 1408
# without bias, the class embedding, 577 position embeddings (24 x 24 patches and the class token) and the
# pre and post LayerNorms; the pixel-shuffle MLP 5632 -> 4096 -> 4096 without biases
# (multi_modal_projector_bias false); the projector 4096 -> 5120 without bias.
LLAMA4_LAYER = 4 * (1408 * 1408 + 1408) + (1408 * 5632 + 5632) + (5632 * 1408 + 1408) + 4 * 1408
LLAMA4_TOWER = 34 * LLAMA4_LAYER + 3 * 14 * 14 * 1408 + 1408 + 577 * 1408 + 4 * 1408 + 5632 * 4096 + 4096 * 4096
LLAMA4_PROJECTOR = 4096 * 5120


def test_llama_4_scout_counts_its_vision_model_and_projector(catalog):
    spec, warnings = model_from_config(read("Llama-4-Scout-17B-16E.json"), "meta-llama/Llama-4-Scout-17B-16E")
    assert spec.vision is not None
    assert spec.vision.params == LLAMA4_TOWER + LLAMA4_PROJECTOR == 871_932_416
    # The largest dummy image is 16 tiles of 336 px and a global tile (transformers' max_patches 16,
    # mllama4.py:574-582, 631-633); each tile becomes 24 x 24 patches shuffled 2 x 2 into 144 embeddings.
    assert (spec.vision.tokens_per_image, spec.vision.pixels_per_image) == (17 * 144, 17 * 3 * 336 * 336)
    assert not [w for w in warnings if "not counted" in w]
    entry = catalog.model("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    assert entry.vision is not None
    assert spec.vision.model_copy(update={"sources": []}) == entry.vision.model_copy(update={"sources": []})


@pytest.mark.parametrize("key", ["vision_config", "text_config"])
@pytest.mark.parametrize("value", [[1, 2], "siglip", 3])
def test_a_config_section_that_is_not_an_object_is_one_clear_error(key, value):
    """A vision_config that is not an object would drop the tower silently (a KV pool too large); a
    text_config that is not one would size the outer config as the language model."""
    config = read("gemma-3-12b-it.json")
    config[key] = value
    with pytest.raises(CatalogError, match=f"{key} is {type(value).__name__}, not an object"):
        model_from_config(config, "bad")


def test_a_rope_scaling_that_is_not_an_object_is_one_clear_error():
    config = read("gemma-3-12b-it.json")
    config["text_config"]["rope_scaling"] = "linear"
    with pytest.raises(CatalogError, match="rope_scaling is str, not an object"):
        model_from_config(config, "bad")


@pytest.mark.parametrize(
    "name, section, key, value",
    [
        ("Llama-4-Scout-17B-16E.json", "text_config", "attention_chunk_size", -8192),
        ("gemma-3-12b-it.json", "text_config", "sliding_window", -5),
        ("gemma-3-12b-it.json", "rope_scaling", "factor", -8),
        ("gemma-3-12b-it.json", "rope_scaling", "factor", float("nan")),
        ("gemma-3-12b-it.json", "rope_scaling", "factor", "8"),
    ],
)
def test_a_bad_size_names_its_config_key(name, section, key, value):
    """One line naming the config.json key, not the schema field it fills ('size', 'rope_caches.0')."""
    config = read(name)
    target = config["text_config"]["rope_scaling"] if section == "rope_scaling" else config[section]
    target[key] = value
    with pytest.raises(CatalogError, match=key):
        model_from_config(config, "bad")
