"""The Sample of one node from the fleet's records of it (node_sample.node_sample, pure): MIG GPU instances as the
fleet reads them, and a node past Prometheus's lookback dated so that it looks stale."""

from __future__ import annotations

from gpumem_tui.sources.prometheus.node_sample import NodeRead, node_sample
from gpumem_tui.sources.prometheus.records import FleetGpu, FleetNode, FleetSample

AT = 1767225720.0
GIB = 2**30


def _read(gpus: list[FleetGpu], age: float | None = 5.0) -> NodeRead:
    return NodeRead(FleetSample(source="-", evaluated_at=AT, nodes=[FleetNode(name="n", data_age_s=age)], gpus=gpus))


def test_mig_gpu_instances_are_the_card_s_mig_instances():
    card = {"node": "n", "index": "0", "uuid": "GPU-1f2e3d4c-0000-4000-8000-00000000000a", "card": "NVIDIA H100"}
    sample = node_sample(
        _read(
            [
                FleetGpu(**card, gpu_instance="1", used_bytes=10 * GIB, free_bytes=30 * GIB, total_bytes=40 * GIB),
                FleetGpu(**card, gpu_instance="2", unknown={"used_bytes": "no DCGM_FI_DEV_FB_USED series"}),
            ]
        ),
        "n",
    )
    (gpu,) = sample.gpus
    assert gpu.mig_enabled and gpu.memory_used_bytes is None  # the card's own figures: not in the series
    first, second = gpu.mig_instances
    assert (first.gpu_instance_id, first.memory_used_bytes, first.memory_total_bytes) == (1, 10 * GIB, 40 * GIB)
    assert (second.gpu_instance_id, second.memory_used_bytes) == (2, None)
    assert any(
        e.message == "GPU 0:2 used_bytes: unknown, because no DCGM_FI_DEV_FB_USED series" and e.gpu_index == 0
        for e in sample.errors
    )


def test_the_sample_is_dated_at_the_node_s_newest_series():
    assert node_sample(_read([], age=42.0), "n").timestamp == AT - 42
    past = node_sample(_read([], age=None), "n")  # seen within the hour, not within the 5 min lookback
    assert past.timestamp == AT - 300
    assert any("no dcgm-exporter sample in the last 5 min" in e.message for e in past.errors)
