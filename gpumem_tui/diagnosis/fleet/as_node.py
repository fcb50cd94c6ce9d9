"""The fleet's findings about one engine or one GPU, worded by the node's own rules: the engine or GPU made
the node's Sample as `check --prometheus URL --node N` makes it (sources/prometheus/node_sample.py) and judged
by the node's rule for the code, so `fleet check` says what the node's `check` says of it, with its numbers,
and never in a second wording. What the fleet knows that the node's rule asks for stands in for it: the GPU
indices the pod-to-GPU join read, vLLM's utilization as what the plan leaves free."""

from __future__ import annotations

from collections.abc import Callable

from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.findings.records import Finding, Thresholds
from gpumem_tui.diagnosis.findings.situation import Situation
from gpumem_tui.diagnosis.history import History
from gpumem_tui.engine_records import EndpointStatus
from gpumem_tui.models import GpuRecord, Sample
from gpumem_tui.planner.overlay import GpuOverlay, PlannedBand
from gpumem_tui.sources.prometheus.node_sample import SOURCE, endpoint_status, gpu_records
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetGpu, FleetSample

Rule = Callable[[Situation], list[Finding]]
"""A node's rule for one code (`findings.engines.kv_saturated`)."""


def judged(rule: Rule, sample: Sample, t: Thresholds, plans: list[EnginePlan] | None = None) -> list[Finding]:
    """What the node's `rule` says of `sample` (no history: the fleet reads one moment)."""
    return rule(Situation(plans or [], sample, History(), t))


def engine_sample(engine: FleetEngine, fleet: FleetSample, endpoint: EndpointStatus | None = None) -> Sample:
    """The engine's node as a Sample holding the engine (`endpoint`, else its record as the node's check reads
    it) and its GPUs: as read one by one, else by their index and UUID (so the node's words name them)."""
    read = {g.uuid: g for g in fleet.gpus if g.uuid in engine.gpus and g.gpu_instance is None}
    records, _ = gpu_records(list(read.values()))
    named = {r.uuid for r in records}
    records += [
        GpuRecord(index=index, uuid=uuid)
        for uuid, index in zip(engine.gpus, engine.gpu_indices, strict=False)
        if uuid not in named
    ]
    return Sample(
        timestamp=fleet.evaluated_at,
        hostname=engine.node or "?",
        source=SOURCE,
        gpus=sorted(records, key=lambda r: r.index),
        engines=[endpoint or endpoint_status(engine, fleet)],
    )


def gpu_sample(gpu: FleetGpu, fleet: FleetSample) -> Sample:
    """One GPU read one by one as its node's Sample; one without dcgm-exporter's `gpu` label is no GPU the
    node's check can name (node_sample.py leaves it out too), so the Sample has none."""
    records, _ = gpu_records([gpu])
    return Sample(timestamp=fleet.evaluated_at, hostname=gpu.node, source=SOURCE, gpus=records)


def utilization_plan(gpu: FleetGpu, free: float) -> list[EnginePlan]:
    """What the fleet knows of the plan of a GPU whose engines state their gpu_memory_utilization: the `free`
    bytes it leaves (the node's auto plan leaves that much on purpose)."""
    total = gpu.total_bytes or 0
    if gpu.index is None or not gpu.index.isdigit() or not total:
        return []
    spare = PlannedBand(name="spare", kind="spare", bytes=max(0, round(free)))
    overlay = GpuOverlay(
        label="auto",
        title="gpu_memory_utilization",
        capacity_bytes=total,
        bands=[spare],
        engine_bytes=total - spare.bytes,
        kv_pool_bytes=0,
    )
    return [EnginePlan(endpoint=None, model=None, gpu_indices=[int(gpu.index)], label="auto", overlay=overlay)]
