"""Rules read from vLLM 0.20.0, 0.25.0 and 0.33.0 (docs/vllm-sizing.md, "By release"): each flag the
sizing reads where a later release changed a figure of issue 15's terms."""

from gpumem_tui.planner.vllm import EngineSettings, predict
from gpumem_tui.planner.vllm.cudagraphs import capture_sizes
from gpumem_tui.planner.vllm.versions import rules_for


def sizes(catalog, version, gpu="h100", seqs=1024, tokens=8192):
    return capture_sizes(rules_for(version), catalog.model("llama-3.1-8b"), catalog.gpu(gpu), seqs, tokens)


def test_the_batched_tokens_are_captured_from_0_25(catalog):
    """0.25 appends max_num_batched_tokens when it is below the largest size and off the stride."""
    assert 300 not in sizes(catalog, "0.20.0", tokens=300)
    assert sizes(catalog, "0.25.0", tokens=300)[-1] == 300


def test_max_num_seqs_is_captured_and_blackwell_goes_to_1024_from_0_33(catalog):
    """0.33 appends max_num_seqs (the widest decode batch) and captures up to 1,024 on compute capability 10."""
    assert 100 not in sizes(catalog, "0.25.0", seqs=100)
    assert 100 in sizes(catalog, "0.33.0", seqs=100)
    assert sizes(catalog, "0.25.0", gpu="b200")[-1] == 512
    assert sizes(catalog, "0.33.0", gpu="b200")[-1] == 1024
    assert sizes(catalog, "0.33.0", gpu="h100")[-1] == 512


def test_the_estimate_charged_at_0_33_on_b200_counts_83_graphs(catalog):
    """From 0.20 the estimate comes out of the KV pool, so 0.33's extra Blackwell graphs shrink it."""
    settings = dict(model=catalog.model("llama-3.1-8b"), gpu=catalog.gpu("b200"), max_model_len=8192)
    at_25 = predict(EngineSettings(version="0.25.0", **settings))
    at_33 = predict(EngineSettings(version="0.33.0", **settings))
    assert at_25.cudagraph_charged and at_33.cudagraph_charged
    assert at_33.cudagraph_bytes > at_25.cudagraph_bytes


def test_the_top_k_top_p_kernel_by_release():
    """Triton top-k/top-p from 0.17 at 8 requests or more (PyTorch's sort below) through 0.25, at any count
    by 0.33 (the sampler rules themselves live beside the sampler term: versions.sampler_sort_below)."""
    assert not rules_for("0.16.0").sampler_from_source
    assert rules_for("0.19.0").sampler_sort_below == 8
    assert rules_for("0.25.0").sampler_sort_below == 8
    assert rules_for("0.33.0").sampler_sort_below == 0


def test_the_unquantized_moe_kernel_by_release_and_gpu():
    """None before 0.14 (no kept workspace); Triton at 0.19; FlashInfer first on Hopper at 0.20-0.22 and on
    Blackwell from 0.20; Hopper back on Triton from 0.23; Ampere on Triton throughout."""
    assert rules_for("0.13.0").moe_kernel("9.0") is None
    assert rules_for("0.19.0").moe_kernel("9.0") == "triton"
    assert rules_for("0.20.0").moe_kernel("9.0") == "flashinfer"
    assert rules_for("0.25.0").moe_kernel("9.0") == "triton"
    assert rules_for("0.33.0").moe_kernel("10.0") == "flashinfer"
    assert rules_for("0.33.0").moe_kernel("8.0") == "triton"


def test_the_hopper_mxfp4_value_padding_by_release():
    """0.17 to 0.21 pad both packed dimensions to 64; before 0.17 and from 0.22 only to the swizzle's 16 x 32
    (hopper_value.py read at every release 0.12-0.25 and at 0.33). One answer: the MXFP4 layout reads it."""
    assert rules_for("0.16.0").mxfp4_hopper_value_align == (16, 32)
    assert rules_for("0.17.0").mxfp4_hopper_value_align == (64, 64)
    assert rules_for("0.20.0").mxfp4_hopper_value_align == (64, 64)
    assert rules_for("0.21.0").mxfp4_hopper_value_align == (64, 64)
    assert rules_for("0.22.0").mxfp4_hopper_value_align == (16, 32)
    assert rules_for("0.25.0").mxfp4_hopper_value_align == (16, 32)
    assert rules_for("0.33.0").mxfp4_hopper_value_align == (16, 32)


def test_the_mxfp4_layout_releases_read_and_the_scale_groups():
    """The Hopper MXFP4 layout was read at 0.12-0.25 and 0.33; 0.33 pads the scales' K groups to 4, before 2."""
    assert [rules_for(v).mxfp4_layout_read for v in ("0.11.0", "0.12.0", "0.25.1", "0.26.0", "0.33.0")] == [
        False,
        True,
        True,
        False,
        True,
    ]
    assert rules_for("0.25.0").mxfp4_scale_k_groups == 2
    assert rules_for("0.33.0").mxfp4_scale_k_groups == 4


def test_the_original_mxfp4_scales_are_kept_until_0_24():
    """0.12 to 0.24 keep the checkpoint's uint8 scales beside the swizzled copies; from 0.25 the Triton path
    drops them once swizzled."""
    assert rules_for("0.20.0").mxfp4_keeps_original_scales
    assert rules_for("0.24.0").mxfp4_keeps_original_scales
    assert not rules_for("0.25.0").mxfp4_keeps_original_scales
    assert not rules_for("0.33.0").mxfp4_keeps_original_scales
