"""The CUDA-graph estimate (`Estimated CUDA graph memory: X GiB total`) built from what vLLM captures:
how many sizes, in which modes, the first FULL capture's split buffers, and the cost of each further graph."""

import json
import re

import pytest

from gpumem_tui.catalog import MlaSpec, ModelSpec, MoeSpec
from gpumem_tui.catalog.hfconfig import model_from_config
from gpumem_tui.planner.vllm import EngineSettings, predict
from gpumem_tui.planner.vllm.cudagraphs import (
    FIRST_CAPTURE_BYTES,
    FULL_SPLITS,
    GRAPH_BYTES_PER_LAYER,
    capture_sizes,
    estimate_bytes,
    first_piecewise_bytes,
    flash_splits,
    full_graphs,
    per_graph_bytes,
    split_buffers,
)
from gpumem_tui.planner.vllm.from_log import Stated, release_of, settings_from
from gpumem_tui.planner.vllm.versions import rules_for
from gpumem_tui.units import GIB, MIB
from tests.datafiles import CALIBRATION, GRAPH_ESTIMATES, HUB_CONFIGS

RULES_19 = rules_for("0.19.0")

# The config.json shape of a DEV model, made by hand before the catalog held it (the Hub's config.json).
DEEPSEEK_V2_LITE = ModelSpec(
    id="deepseek-ai/DeepSeek-V2-Lite-Chat",
    architecture="DeepseekV2ForCausalLM",
    layers=27,
    hidden_size=2048,
    intermediate_size=10944,
    attention_heads=16,
    kv_heads=16,
    vocab_size=102400,
    moe=MoeSpec(experts=64, experts_per_token=6, expert_intermediate_size=1408, shared_experts=2, first_dense_layers=1),
    mla=MlaSpec(kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128),
)


def dev_cases(catalog):
    """Each DEV startup of tests/data with the model it ran (catalog entry or config.json shape)."""
    specs = {
        "deepseek-ai/DeepSeek-V2-Lite-Chat": DEEPSEEK_V2_LITE,
        "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic": catalog.model("meta-llama/Llama-3.3-70B-Instruct"),
    }
    for case in json.loads(GRAPH_ESTIMATES.read_text()):
        spec = specs.get(case["model"]) or catalog.model(case["model"])
        settings = EngineSettings(
            model=spec,
            gpu=catalog.gpu("h100"),
            version=case["vllm_version"],
            tp=case["tensor_parallel_size"],
            utilization=case["gpu_memory_utilization"],
            max_model_len=case["max_model_len"],
            quantization="fp8" if "fp8" in case["model"] else None,
        )
        yield case, settings


def logged_modes(case) -> dict[str, tuple[float, int, float]]:
    """Per mode, what the log states: first-capture MiB, graphs, per-graph MiB."""
    found = {}
    for line in case["log_lines"]:
        match = re.search(
            r"Estimated (\w+) CUDA graph memory: ([\d.]+) MiB first-capture \+ \((\d+)-1\) × ([\d.]+)", line
        )
        if match:
            found[match[1]] = (float(match[2]), int(match[3]), float(match[4]))
    return found


def test_the_estimate_follows_the_six_dev_startups(catalog):
    """Every DEV log's `Estimated CUDA graph memory` within 12 %, gpt-oss and DeepSeek-V2-Lite too (they
    needed 20 % and 15 % while every layer cost the same); the per-layer figure of before 0.14 (0.024 GiB x
    layers) missed DeepSeek-V2-Lite by -53 % and gpt-oss by -47 %."""
    misses = []
    for case, settings in dev_cases(catalog):
        predicted, logged = predict(settings).cudagraph_bytes / GIB, case["cudagraph_estimated_gib"]
        if abs(predicted - logged) > 0.12 * logged:
            misses.append((case["model"], round(predicted, 2), logged))
    assert misses == []


def test_the_graph_counts_are_the_logged_ones(catalog):
    """`Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=51`: 83 up to 1,024 for gpt-oss, and
    PIECEWISE only for Llama 4's chunked local attention."""
    for case, settings in dev_cases(catalog):
        p = predict(settings)
        sizes = capture_sizes(RULES_19, settings.model, settings.gpu, p.max_num_seqs, p.max_num_batched_tokens)
        modes = logged_modes(case)
        assert {mode: count for mode, (_, count, _) in modes.items()} == {
            mode: len(sizes)
            for mode in (["PIECEWISE", "FULL"] if "Llama4" not in settings.model.architecture else ["PIECEWISE"])
        }, case["model"]


def test_the_first_full_capture_is_flash_attention_3s_split_buffers(catalog):
    """FA3 is captured with 32 splits: fp32 out_accum + lse of 32 x 512 x heads per rank x (V width + 1).
    The DEV logs' first FULL captures hold them plus one graph: Qwen3-30B 266 MiB (32 heads x 128),
    Llama-3.3-70B at TP 4 142 MiB (16 heads), DeepSeek-V2-Lite 522 MiB (16 heads x the 512-wide latent)."""
    h100 = catalog.gpu("h100")
    assert split_buffers(catalog.model("Qwen/Qwen3-30B-A3B"), h100, 512, 1) == FULL_SPLITS * 512 * 32 * 129 * 4
    assert split_buffers(catalog.model("meta-llama/Llama-3.3-70B-Instruct"), h100, 512, 4) == 32 * 512 * 16 * 129 * 4
    assert split_buffers(DEEPSEEK_V2_LITE, h100, 512, 1) == 32 * 512 * 16 * 513 * 4
    for case, settings in dev_cases(catalog):
        full = logged_modes(case).get("FULL")
        if full:
            mine = split_buffers(settings.model, h100, 512 if full[1] == 51 else 1024, settings.tp)
            mine += per_graph_bytes(settings.model, settings.model.layers, settings.tp)
            assert mine / MIB == pytest.approx(full[0], abs=16), case["model"]


def test_no_split_buffers_off_hopper_with_triton_attention_or_sinks(catalog):
    """FA3 (and so forced splits) is Hopper's; Gemma 3's image prefix takes Triton attention (its DEV log:
    4 MiB first FULL capture); gpt-oss with sinks logged 8 MiB."""
    qwen = catalog.model("Qwen/Qwen3-30B-A3B")
    assert split_buffers(qwen, catalog.gpu("a100"), 512, 1) == 0
    assert split_buffers(qwen, catalog.gpu("b200"), 512, 1) == 0
    assert split_buffers(catalog.model("google/gemma-3-12b-it"), catalog.gpu("h100"), 512, 1) == 0
    assert split_buffers(catalog.model("openai/gpt-oss-20b"), catalog.gpu("h100"), 1024, 2) == 0


def test_capture_sizes_as_vllm_lists_them(catalog):
    """1, 2, 4, every 8 below 256, every 16 up to min(2 x max_num_seqs, 512), capped at the batched tokens."""
    llama, h100 = catalog.model("llama-3.1-8b"), catalog.gpu("h100")
    assert len(capture_sizes(RULES_19, llama, h100, 1024, 8192)) == 51
    assert capture_sizes(RULES_19, llama, h100, 64, 8192)[-1] == 128
    assert capture_sizes(RULES_19, llama, h100, 1024, 100) == [1, 2, 4, *range(8, 97, 8)]
    assert len(capture_sizes(RULES_19, catalog.model("openai/gpt-oss-20b"), h100, 1024, 8192)) == 83


def test_the_estimate_adds_up_on_a_hand_made_model(catalog):
    """Ten dense layers on one H100: per graph 10 x 0.17 MiB in each mode; the larger first capture is the
    FULL one (32 x 512 x 8 heads x 129 x 4 B = 64.5 MiB + one graph) against PIECEWISE's activations +
    64 MiB + one graph; then 50 more graphs in each of the two modes."""
    spec = ModelSpec(
        id="hand",
        architecture="LlamaForCausalLM",
        layers=10,
        hidden_size=1024,
        intermediate_size=4096,
        attention_heads=8,
        kv_heads=8,
        vocab_size=32000,
    )
    h100 = catalog.gpu("h100")
    per_graph = 10 * GRAPH_BYTES_PER_LAYER
    full_first = 32 * 512 * 8 * 129 * 4 + per_graph
    piecewise_first = 512 * 2 * (3 * 4096 + 3 * 1024) + per_graph + FIRST_CAPTURE_BYTES
    assert first_piecewise_bytes(spec, 512, 2, 1, 10) == piecewise_first
    assert (
        estimate_bytes(RULES_19, spec, h100, 1024, 8192, 2, 1, 10)
        == max(full_first, piecewise_first) + 2 * 50 * per_graph
    )


SEGMENT_GIB = 20 / 1024
"""PyTorch's caching allocator opens a new 20 MiB segment for an allocation of 1-10 MiB that no free block
holds (kLargeBuffer, c10/cuda/CUDACachingAllocator.cpp)."""
NOISE = {
    13: "granite-3.1-2b's second PIECEWISE capture logged 26 MiB per graph, 20 MiB more than the same "
    "40-layer model inside granite-vision-3.3-2b (#16: 6 MiB): one new allocator segment, times 50 graphs",
    27: "Llama-3.1-8B at TP 2 logged 26 MiB per PIECEWISE graph where TP 1 and TP 4 logged 6 (#24, #28): "
    "one new allocator segment, times 50 graphs; its capture took 0.76 GiB",
}


def test_calibration_estimates_stay_close(catalog):
    """Every v0.19 calibration case the catalog can express within max(0.2 GiB, 20 %) of its logged
    estimate, except the two in NOISE, which are within it once the one allocator segment their second
    capture opened (times the 50 further graphs) is taken off. Qwen2.5-7B logs 0.61, 0.71 and 0.81 GiB for
    one architecture (bf16, fp8, w8a8): vLLM's per-graph sample moves in 2 MiB pages, one page per mode is
    0.1 GiB."""
    misses = []
    for index, case in enumerate(json.loads(CALIBRATION.read_text())):
        if case.get("cudagraph_estimated_gib") is None:
            continue
        try:
            settings = settings_from(
                catalog, Stated.from_case(case), release_of(case.get("vllm_version"), case["log_lines"])["version"]
            )
        except LookupError:
            continue
        predicted, logged = predict(settings).cudagraph_bytes / GIB, case["cudagraph_estimated_gib"]
        if index in NOISE:
            assert abs(predicted - logged) > max(0.2, 0.2 * logged), index
            logged -= 50 * SEGMENT_GIB
        if abs(predicted - logged) > max(0.2, 0.2 * logged):
            misses.append((index, round(predicted, 2), logged))
    assert misses == []


def test_a_graph_costs_more_for_the_kernels_a_layer_adds():
    """Per graph and mode, 0.17 MiB a layer; a routed-expert layer 1.3 layers, a shared expert one layer
    more, TP's all-reduces 0.2 of a layer: a hand-made 10-layer MoE with a shared expert at TP 2 costs
    10 x (1 + 0.3 + 1 + 0.2) = 25 layers' worth, the same dense at TP 1 ten."""
    dense = ModelSpec(
        id="hand-dense",
        architecture="LlamaForCausalLM",
        layers=10,
        hidden_size=1024,
        intermediate_size=4096,
        attention_heads=8,
        kv_heads=8,
        vocab_size=32000,
    )
    moe = dense.model_copy(
        update={
            "id": "hand-moe",
            "moe": MoeSpec(experts=8, experts_per_token=2, expert_intermediate_size=512, shared_experts=1),
        }
    )
    assert per_graph_bytes(dense, 10, 1) == 10 * GRAPH_BYTES_PER_LAYER
    assert per_graph_bytes(dense, 10, 2) == 12 * GRAPH_BYTES_PER_LAYER
    assert per_graph_bytes(moe, 10, 2) == 25 * GRAPH_BYTES_PER_LAYER


def test_the_split_buffers_are_a_named_term_and_off_hopper_the_estimate_says_assumed(catalog):
    """`engine.terms` carries the split buffers inside the estimate; an A100 plan says its per-graph figures
    are H100's; no term and no note with --enforce-eager."""
    qwen = catalog.model("Qwen/Qwen3-30B-A3B")
    hopper = predict(EngineSettings(model=qwen, gpu=catalog.gpu("h100"), version="0.19.0", max_model_len=8192))
    assert hopper.terms["graph_split_buffers"] == split_buffers(qwen, catalog.gpu("h100"), 512, 1)
    assert not any("CUDA-graph" in note for note in hopper.assumed)
    ampere = predict(EngineSettings(model=qwen, gpu=catalog.gpu("a100"), version="0.19.0", max_model_len=8192))
    assert "graph_split_buffers" not in ampere.terms
    assert any("measured on H100, not A100" in note for note in ampere.assumed)
    eager = predict(
        EngineSettings(model=qwen, gpu=catalog.gpu("a100"), version="0.19.0", max_model_len=8192, enforce_eager=True)
    )
    assert eager.cudagraph_bytes == 0 and not any("CUDA-graph" in note for note in eager.assumed)


def _read(name: str, drop_architectures: bool = False) -> ModelSpec:
    config = json.loads((HUB_CONFIGS / name).read_text())
    if drop_architectures:
        config.pop("architectures", None)
    return model_from_config(config, name)[0]


def test_a_config_json_model_captures_as_its_catalog_twin(catalog):
    """Gemma 3's bidirectional image prefix (Triton attention, no FA3 splits) and Llama 4's chunked local
    attention (PIECEWISE only) follow the model's vision tower and chunk size as read, not its class name:
    the config.json read gives the catalog twin's estimate, with or without an `architectures` key (where
    it is missing the class is the model_type, `gemma3` or `llama4`). Mistral 3's tower attends causally,
    so its FULL graphs keep FA3's splits; Maverick's text_config alone still has chunked attention."""
    h100 = catalog.gpu("h100")
    twins = {
        "gemma-3-12b-it.json": catalog.model("google/gemma-3-12b-it"),
        "Llama-4-Scout-17B-16E.json": catalog.model("meta-llama/Llama-4-Scout-17B-16E-Instruct"),
    }
    for name, twin in twins.items():
        for drop in (False, True):
            read = _read(name, drop)
            assert (flash_splits(read, h100), full_graphs(read)) == (flash_splits(twin, h100), full_graphs(twin))
            assert estimate_bytes(RULES_19, read, h100, 1024, 8192, 2, 4, read.layers) == estimate_bytes(
                RULES_19, twin, h100, 1024, 8192, 2, 4, twin.layers
            ), (name, drop)
    assert not flash_splits(_read("gemma-3-12b-it.json", True), h100)
    assert not full_graphs(_read("Llama-4-Scout-17B-16E.json", True))
    assert flash_splits(_read("Mistral-Small-3.1-24B-Instruct-2503.json"), h100)
    assert not full_graphs(_read("Llama-4-Maverick-17B-128E.json"))
