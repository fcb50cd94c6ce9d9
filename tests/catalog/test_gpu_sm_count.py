"""The SM count of each catalog GPU (issue 15, term 1: vLLM's Triton top-k/top-p sampler keeps an
(SM count x vocab) fp32 buffer, v1/sample/ops/topk_topp_triton.py:1013-1019). A count is a sourced fact
or None: never a guess."""

import pytest

from gpumem_tui.catalog import load_catalog


@pytest.fixture(scope="module")
def gpus():
    return load_catalog().gpus


def test_every_gpu_has_a_sourced_sm_count_or_none(gpus):
    for key, gpu in gpus.items():
        if gpu.sm_count is not None:
            assert any(f"SMs: {gpu.sm_count}" in source for source in gpu.sources), key


@pytest.mark.parametrize(
    "key, sms",
    [
        ("H100-SXM-80GB", 132),
        ("H200-SXM-141GB", 132),
        ("H100-PCIe-80GB", 114),
        ("A100-SXM4-80GB", 108),
        ("A100-PCIe-40GB", 108),
        ("B200", 148),
        ("L40S", 142),
    ],
)
def test_the_datacenter_parts_carry_their_sm_count(gpus, key, sms):
    assert gpus[key].sm_count == sms


def test_an_unsourced_part_says_none(gpus):
    assert gpus["L4"].sm_count is None


def test_every_l2_size_is_sourced(gpus):
    """Inductor's autotuning flush buffer is the L2's size (planner/vllm/forward.py)."""
    for key, gpu in gpus.items():
        if gpu.l2_cache_mib is not None:
            assert any(f"L2: {gpu.l2_cache_mib} MiB" in source for source in gpu.sources), key
    assert gpus["H100-SXM-80GB"].l2_cache_mib == gpus["H100-PCIe-80GB"].l2_cache_mib == 50
