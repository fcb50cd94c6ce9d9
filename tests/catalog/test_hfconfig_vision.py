"""config.json of a multimodal checkpoint (issue 15, term 3): the reader counts the vision tower from
`vision_config` as vLLM 0.19.0 builds it, and the RoPE caches the language model makes."""

import json

from gpumem_tui.catalog.hfconfig import model_from_config
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
