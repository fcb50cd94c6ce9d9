"""Training and CPU-offload numbers from the second seed."""

import pytest

from gpumem_tui.planner.offload import PCIE_X16_GBPS, kv_offload_breakeven, offload_estimate
from gpumem_tui.planner.training import adapter_training, full_training
from gpumem_tui.units import GB, TB


def test_full_training_70b(catalog):
    """70.6 x 16 = 1,130 GB, plus 20 % = about 1.36 TB."""
    estimate = full_training(catalog.model("llama-3.1-70b"))
    assert round((estimate.total_bytes - estimate.activations_bytes) / GB, -1) == 1130
    assert estimate.total_bytes / TB == pytest.approx(1.36, abs=0.01)


def test_qlora_fits_a_65b_model_on_one_48_gb_gpu(catalog):
    qlora = adapter_training(catalog.model("llama-65b"), catalog.format("nf4"), mode="qlora")
    assert qlora.total_bytes < 48 * GB
    lora = adapter_training(catalog.model("llama-65b"), catalog.format("bf16"))
    assert lora.total_bytes > 2 * 48 * GB  # a 16-bit base alone is 130 GB


def test_cpu_offload_70b_bf16_on_one_h100(catalog):
    """60 GB at 3,350 GB/s = about 18 ms; 81 GB over PCIe 5 x16 at 64 GB/s = 1.27 s; under one token/s."""
    h100 = catalog.gpu("h100")
    estimate = offload_estimate(141.2 * GB, 1, 60 * GB, h100.mem_bandwidth_gbps, PCIE_X16_GBPS[h100.pcie_gen])
    assert estimate.hbm_seconds * 1e3 == pytest.approx(18, abs=0.5)
    assert estimate.link_seconds == pytest.approx(1.27, abs=0.005)
    assert estimate.tokens_per_second < 1
    assert 1 - estimate.gpu_busy_fraction == pytest.approx(0.98, abs=0.01)


def test_four_h100s_read_their_slices_in_parallel(catalog):
    """35 GB slices in about 10.5 ms: roughly 95 tokens per second."""
    h100 = catalog.gpu("h100")
    estimate = offload_estimate(141.2 * GB, 4, 80 * GB, h100.mem_bandwidth_gbps, 64)
    assert estimate.link_seconds == 0
    assert estimate.seconds_per_token * 1e3 == pytest.approx(10.5, abs=0.05)
    assert round(estimate.tokens_per_second) == 95


def test_kv_offload_breakeven_moves_with_the_link():
    fast = kv_offload_breakeven(8192, 2 * GB, prefill_flops=1e15, tflops=1000, link_gbps=64)
    slow = kv_offload_breakeven(8192, 2 * GB, prefill_flops=1e15, tflops=1000, link_gbps=0.5)
    assert fast.fetch_wins and not slow.fetch_wins
    assert fast.recompute_seconds == pytest.approx(2.0)
    assert fast.breakeven_link_gbps == pytest.approx(1.0)
