"""vLLM sizing terms 5 (MLA block size by GPU generation) and 8 (non-torch memory at TP >= 2 by interconnect)."""

import json

import pytest

from gpumem_tui.catalog.schema import GpuSpec, MlaSpec, ModelSpec
from gpumem_tui.cli import main
from gpumem_tui.planner.vllm import EngineSettings, predict
from gpumem_tui.units import GIB

# A small DeepSeek-V2-Lite-shaped dense MLA model, made by hand so it fits one card (the cache shape is
# what matters: one 512 + 64 latent per layer and token).
MLA_SMALL = ModelSpec(
    id="hand-made/mla-small",
    architecture="DeepseekV2ForCausalLM",
    layers=27,
    hidden_size=2048,
    intermediate_size=10944,
    attention_heads=16,
    kv_heads=16,
    head_dim=192,
    vocab_size=102400,
    max_context=32768,
    native_dtype="bfloat16",
    mla=MlaSpec(kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128),
)


def mla(catalog, gpu="h100", **kw):
    return predict(EngineSettings(model=MLA_SMALL, gpu=catalog.gpu(gpu), max_model_len=8192, **kw))


def test_mla_on_hopper_at_0_19_pages_16_tokens_four_times_the_blocks_of_64(catalog):
    """0.19.0 picks FLASH_ATTN_MLA first on Hopper (platforms/cuda.py:91-97), which keeps the default 16."""
    hopper = mla(catalog, version="0.19.0")
    forced = mla(catalog, version="0.19.0", block_size=64)
    assert hopper.block_size == 16
    assert hopper.kv_cache_bytes == forced.kv_cache_bytes
    assert hopper.num_gpu_blocks == hopper.kv_cache_bytes // (16 * 576 * 2 * 27)
    assert hopper.num_gpu_blocks // 4 == forced.num_gpu_blocks


def test_mla_block_size_by_generation_and_cache_dtype_at_0_19(catalog):
    assert mla(catalog, gpu="b200", version="0.19.0").block_size == 32  # FLASHINFER_MLA: 32 or 64
    assert mla(catalog, gpu="a100", version="0.19.0").block_size == 16  # TRITON_MLA: multiples of 16
    assert mla(catalog, version="0.19.0", kv_cache_dtype="fp8").block_size == 64  # FLASHMLA: 64 only


def test_mla_before_0_19_keeps_flashmla_64(catalog):
    assert mla(catalog, version="0.11.0").block_size == 64


def test_the_mla_backend_choice_read_at_0_20_0_25_0_33_keeps_the_0_19_sizes_and_says_nothing_assumed(catalog):
    """0.20, 0.25 and 0.33 keep 0.19's lists (platforms/cuda.py:112-124 at 0.20.0, :118-136 at 0.25.0,
    :123-131 at 0.33.0; docs/vllm-sizing.md "By release"): Hopper FLASH_ATTN_MLA 16 (FLASHMLA 64 for an fp8
    cache), Blackwell FLASHINFER_MLA 32, compute capability 8 TRITON_MLA 16. A release between them was not
    read and says so."""
    for version in ("0.20.0", "0.25.0", "0.33.0"):
        sizes = [
            mla(catalog, version=version).block_size,
            mla(catalog, version=version, kv_cache_dtype="fp8").block_size,
            mla(catalog, gpu="b200", version=version).block_size,
            mla(catalog, gpu="a100", version=version).block_size,
        ]
        assert sizes == [16, 64, 32, 16], version
        assert not any("MLA block size" in note for note in mla(catalog, version=version).assumed), version
    assert any("MLA block size" in note and "0.22" in note for note in mla(catalog, version="0.22.0").assumed)


def test_a_gpu_of_unknown_generation_says_the_mla_block_size_is_assumed():
    unknown = GpuSpec(key="stated", nominal_gib=80)
    p = predict(EngineSettings(model=MLA_SMALL, gpu=unknown, version="0.19.0", max_model_len=8192))
    assert p.block_size == 16
    assert any("block size 16" in note and "assumed" in note for note in p.assumed)


def test_non_mla_models_keep_16_token_blocks(catalog):
    for gpu in ("h100", "b200", "a100"):
        p = predict(EngineSettings(model=catalog.model("llama-3.1-8b"), gpu=catalog.gpu(gpu), version="0.19.0"))
        assert p.block_size == 16


def dense_tp2(catalog, gpu):
    model = catalog.model("qwen2.5-7b")
    return predict(EngineSettings(model=model, gpu=gpu, version="0.19.0", tp=2, max_model_len=8192))


def test_non_torch_at_tp2_on_pcie_cards_is_a_quarter_gib(catalog):
    for gpu in ("l4", "l40s", "rtx-4090"):
        p = dense_tp2(catalog, catalog.gpu(gpu))
        assert p.non_torch_bytes / GIB == pytest.approx(0.25), gpu
        assert not any("interconnect" in note for note in p.assumed)


def test_non_torch_at_tp2_on_nvlink_is_2_1_gib(catalog):
    p = dense_tp2(catalog, catalog.gpu("h100"))
    assert p.non_torch_bytes / GIB == pytest.approx(2.1)
    assert not any("interconnect" in note for note in p.assumed)


def test_an_unknown_interconnect_keeps_2_1_gib_and_says_assumed(catalog):
    p = dense_tp2(catalog, catalog.gpu("h100-pcie"))
    assert p.non_torch_bytes / GIB == pytest.approx(2.1)
    assert any("interconnect" in note and "assumed" in note for note in p.assumed)


def test_plan_says_the_assumed_figures_in_text_and_json(capsys):
    args = ["plan", "--model", "qwen2.5-7b", "--gpu", "h100-pcie", "--gpus", "2", "--engine", "vllm"]
    args += ["--vllm-version", "0.19.0", "--max-model-len", "8192"]
    assert main(args) == 0
    assert "~ non-torch 2.10 GiB at TP 2 assumed (H100-PCIe-80GB's interconnect" in capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    engine = json.loads(capsys.readouterr().out)["engine"]
    assert engine["non_torch_bytes"] == round(2.1 * GIB) and "assumed" in engine["assumed"][0]
