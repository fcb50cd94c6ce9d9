"""Offload arithmetic: token time when weights spill to CPU memory, and when fetching cached KV back
beats recomputing it."""

from __future__ import annotations

from gpumem_tui.records import Record
from gpumem_tui.units import GB

# Usable one-direction bandwidth of a x16 link, by PCIe generation (the seed's 64 GB/s for gen 5).
PCIE_X16_GBPS = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}


class OffloadEstimate(Record):
    """Per-token time when each GPU reads its resident weights from HBM and the rest over a link."""

    gpus: int
    resident_bytes_per_gpu: int
    offloaded_bytes_per_gpu: int
    hbm_seconds: float
    link_seconds: float
    seconds_per_token: float
    tokens_per_second: float
    gpu_busy_fraction: float
    """Share of each token's time spent reading HBM; the rest the GPU waits on the link."""


def offload_estimate(
    weights_bytes: int, gpus: int, resident_bytes_per_gpu: int, hbm_gbps: float, link_gbps: float
) -> OffloadEstimate:
    """Every token reads every weight once: HBM-resident slices at HBM speed, the rest over the link.
    GPUs of a split read their slices in parallel."""
    per_gpu = weights_bytes / gpus
    resident = min(per_gpu, max(0, resident_bytes_per_gpu))
    offloaded = per_gpu - resident
    hbm = resident / (hbm_gbps * GB)
    link = offloaded / (link_gbps * GB) if offloaded else 0.0
    total = hbm + link
    return OffloadEstimate(
        gpus=gpus,
        resident_bytes_per_gpu=round(resident),
        offloaded_bytes_per_gpu=round(offloaded),
        hbm_seconds=hbm,
        link_seconds=link,
        seconds_per_token=total,
        tokens_per_second=1 / total if total else float("inf"),
        gpu_busy_fraction=hbm / total if total else 1.0,
    )


class KvOffloadBreakEven(Record):
    """Fetching a conversation's cached KV back over a link versus recomputing it with a prefill."""

    context: int
    kv_bytes: int
    fetch_seconds: float
    recompute_seconds: float
    breakeven_link_gbps: float
    """The link speed at which both cost the same; faster links make fetching the better choice."""
    fetch_wins: bool


def kv_offload_breakeven(
    context: int, kv_bytes: int, prefill_flops: float, tflops: float, link_gbps: float, efficiency: float = 0.5
) -> KvOffloadBreakEven:
    """Recompute time is the prefill's FLOPs at `efficiency` of the dense peak; fetch time is bytes / link."""
    recompute = prefill_flops / (tflops * 1e12 * efficiency)
    fetch = kv_bytes / (link_gbps * GB)
    breakeven = kv_bytes / recompute / GB if recompute else float("inf")
    return KvOffloadBreakEven(
        context=context,
        kv_bytes=kv_bytes,
        fetch_seconds=fetch,
        recompute_seconds=recompute,
        breakeven_link_gbps=breakeven,
        fetch_wins=fetch < recompute,
    )


def prefill_flops(active_params: int, layers: int, attention_width: int, context: int) -> float:
    """Forward FLOPs to prefill `context` tokens: 2 per active parameter per token, plus causal
    attention scores and values (2 matmuls x 2 FLOPs x context^2 / 2 x width per layer)."""
    return 2.0 * active_params * context + 2.0 * layers * attention_width * context * context
