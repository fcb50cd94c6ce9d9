"""config.json MoE types whose shared experts live in their own keys (issue 15, term 7): Qwen2-MoE's
`shared_expert_intermediate_size` and gate, Llama 4's one shared expert and interleaved MoE layers.

Each expected count is worked out by hand from the module shapes vLLM 0.19.0 builds
(model_executor/models/qwen2_moe.py, llama4.py) and checked against the model's published total."""

import json

import pytest

from gpumem_tui.catalog import CatalogError
from gpumem_tui.catalog.hfconfig import model_from_config
from gpumem_tui.planner.params import count_params
from tests.datafiles import HUB_CONFIGS


def read(name: str) -> dict:
    return json.loads((HUB_CONFIGS / name).read_text())


# Per layer: attention (q, k, v, o and the q/k/v biases Qwen2-MoE carries), routed experts (3·H·I each),
# the shared expert (3·H·I_shared), the router (H·E), the shared-expert gate (H·1, Qwen2-MoE only) and two
# RMSNorms (2·H); then the untied embedding and LM head (2·V·H) and the final norm (H).
CASES = {
    # H 2048, 24 layers, 16 heads (MHA), 60 experts of 1408, shared 5632, V 151936.
    # 24·(16,783,360 + 519,045,120 + 34,603,008 + 122,880 + 2,048 + 4,096) + 2·311,164,928 + 2,048
    "Qwen1.5-MoE-A2.7B-Chat.json": (14_315_784_192, 2_689_173_504, 14.3e9, 2.7e9),
    # H 3584, 28 layers, 28 heads / 4 KV heads, 64 experts of 2560, shared 20480, V 151936.
    # 28·(29,364,736 + 1,761,607,680 + 220,200,960 + 229,376 + 3,584 + 7,168) + 2·544,538,624 + 3,584
    "Qwen2-57B-A14B.json": (57_408_658_944, 14_249_270_784, 57.4e9, 14.2e9),
    # H 5120, 48 MoE layers, 40 heads / 8 KV heads, 16 experts of 8192, shared 8192, V 202048 (text only).
    # 48·(62,914,560 + 2,013,265,920 + 125,829,120 + 81,920 + 10,240) + 2·1,034,485,760 + 5,120
    "Llama-4-Scout-17B-16E.json": (107_769_861_120, 17_172_894_720, 109e9, 17e9),
    # Every second layer MoE (interleave_moe_layer_step 2): 24 with 128 experts + shared, 24 dense of 16384.
    # 24·(62,914,560 + 16,106,127,360 + 125,829,120 + 655,360 + 10,240)
    #   + 24·(62,914,560 + 251,658,240 + 10,240) + 2·1,034,485,760 + 5,120
    "Llama-4-Maverick-17B-128E.json": (400_711_848_960, 17_184_691_200, 400e9, 17e9),
}


@pytest.mark.parametrize("name", list(CASES))
def test_shared_experts_are_counted_in_the_weights(name):
    total, active, _, _ = CASES[name]
    spec, warnings = model_from_config(read(name), name)
    counts = count_params(spec)
    assert (counts.total, counts.active) == (total, active)
    assert not [w for w in warnings if "unknown architecture" in w]


@pytest.mark.parametrize("name", list(CASES))
def test_weight_totals_match_the_published_parameter_counts(name):
    """Qwen's model cards give 14.3B/2.7B and 57B/14B (the repository names A14B); Meta's give 109B/17B for
    Scout and 400B/17B for Maverick, whose totals include the vision tower this count leaves out (term 3):
    Scout's text model is 1.1 % under its card."""
    _, _, published_total, published_active = CASES[name]
    counts = count_params(model_from_config(read(name), name)[0])
    assert abs(counts.total - published_total) / published_total < 0.015
    assert abs(counts.active - published_active) / published_active < 0.02


def test_qwen2_moe_shared_expert_has_its_own_width_and_a_gate():
    """qwen2_moe.py:143-162: one shared Qwen2MoeMLP of shared_expert_intermediate_size, gated by a
    ReplicatedLinear(hidden, 1); the routed experts keep moe_intermediate_size."""
    spec, _ = model_from_config(read("Qwen2-57B-A14B.json"), "Qwen/Qwen2-57B-A14B")
    moe = spec.moe
    assert moe is not None
    assert (moe.experts, moe.expert_intermediate_size, moe.shared_experts) == (64, 2560, 1)
    assert moe.shared_expert_intermediate_size == 20480 and moe.shared_expert_gate
    counts = count_params(spec)
    assert counts.shared_experts == 28 * 3 * 3584 * 20480
    assert counts.router == 28 * (3584 * 64 + 3584)
    assert spec.qkv_bias  # qwen2_moe.py:233-241 QKVParallelLinear(bias=True)


def test_qwen2_moe_without_a_shared_expert_keeps_only_the_gate():
    """shared_expert_intermediate_size 0: no shared MLP, but the gate is still built (qwen2_moe.py:143-149)."""
    config = {**read("Qwen1.5-MoE-A2.7B-Chat.json"), "shared_expert_intermediate_size": 0}
    spec, _ = model_from_config(config, "hand-made")
    counts = count_params(spec)
    assert counts.shared_experts == 0 and counts.router == 24 * (2048 * 60 + 2048)


def test_llama4_dense_layers_use_intermediate_size_mlp():
    """llama4.py:347-363: a layer is MoE when (index + 1) % interleave_moe_layer_step == 0, else a dense
    LlamaMLP of intermediate_size_mlp; each MoE layer has one shared expert of intermediate_size (:96-112)."""
    spec, _ = model_from_config(read("Llama-4-Maverick-17B-128E.json"), "meta-llama/Llama-4-Maverick-17B-128E")
    assert spec.intermediate_size == 16384 and spec.moe_layer_count() == 24
    counts = count_params(spec)
    assert counts.dense_mlp == 24 * 3 * 5120 * 16384
    assert counts.shared_experts == 24 * 3 * 5120 * 8192
    assert not spec.qk_norm  # Llama 4's QK norm has no weight (llama4.py:215-224, has_weight=False)


def test_mlp_only_layers_are_named_as_not_read():
    config = {**read("Qwen2-57B-A14B.json"), "mlp_only_layers": [0, 1]}
    _, warnings = model_from_config(config, "hand-made")
    assert any("mlp_only_layers" in w for w in warnings)


@pytest.mark.parametrize("step", [0, -2])
def test_a_bad_decoder_sparse_step_is_named_by_its_key(step):
    config = {**read("Qwen2-57B-A14B.json"), "decoder_sparse_step": step}
    with pytest.raises(CatalogError, match="decoder_sparse_step"):
        model_from_config(config, "hand-made")


@pytest.mark.parametrize("step", [0, -1])
def test_llama4_with_no_interleave_step_has_no_moe_layers(step):
    """llama4.py:347-350: `interleave_moe_layer_step > 0 and ...`; otherwise every layer is dense."""
    config = read("Llama-4-Scout-17B-16E.json")
    config["text_config"]["interleave_moe_layer_step"] = step
    spec, _ = model_from_config(config, "hand-made")
    assert spec.moe is None and count_params(spec).dense_mlp == 48 * 3 * 5120 * 16384
