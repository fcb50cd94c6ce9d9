"""What the simulated fleet's series read of one node at one moment: each readable GPU's memory, the processes
holding GPUs (pid, GPU, pod, memory) and each engine endpoint's status (URL, ok/stale/down, pids), as named
tuples (a frozen dataclass costs ten times as much to define).

dcgm-exporter's series and the vLLM targets' `up` need no more than this, so a node that does not also run
`gpumem-tui export` is read from the simulator's state (`from_state`), not through the NVML binding at every
point: that was half the simulated run's CPU. A node whose exporter is judged needs the whole Sample, and
`of_sample` takes the same fields from it. tests/sources/test_fleet_moment.py holds the two equal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from gpumem_tui.demo.node import SimulatedNode
from gpumem_tui.models import Sample


class GpuMemory(NamedTuple):
    """A readable GPU with its memory read, as NVML's memory v2 reports it."""

    gpu_index: int
    uuid: str | None
    name: str | None
    used: int
    free: int | None
    reserved: int | None


class Held(NamedTuple):
    """One process on one GPU: its pid, its pod (`namespace/name`) where the host sees one, the bytes it holds."""

    pid: int
    gpu_index: int
    pod: str | None
    memory: int | None


class Endpoint(NamedTuple):
    """One engine endpoint as the scraper saw it: ok, stale or down, and the pids joined to it."""

    url: str
    state: str
    pids: tuple[int, ...]


class Moment(NamedTuple):
    """One node at one moment, as its series read it."""

    timestamp: float
    gpus: tuple[GpuMemory, ...]
    processes: tuple[Held, ...]
    endpoints: tuple[Endpoint, ...]


def of_sample(sample: Sample) -> Moment:
    """The fields the series read, taken from a whole Sample."""
    return Moment(
        sample.timestamp,
        tuple(
            GpuMemory(g.index, g.uuid, g.name, g.memory_used_bytes, g.memory_free_bytes, g.memory_reserved_bytes)
            for g in sample.gpus
            if g.readable and g.memory_used_bytes is not None
        ),
        tuple(Held(p.pid, p.gpu_index, p.pod, p.gpu_memory_bytes) for p in sample.processes),
        tuple(Endpoint(e.url, e.state, tuple(e.pids)) for e in sample.engines),
    )


def plain(node: SimulatedNode) -> bool:
    """Whether this node reads as `from_state` says: no MIG card, no card closed to us or without memory v2,
    every process a compute process (each listed once, in the order its card hands memory out), seen from the
    host (inside a container, engines are placed on their GPUs by UUID: `sources.placement`)."""
    groups = node.scenario.gpus
    return (
        not any(g.mig_instances_mib or g.denied or "memory_v2" in g.unsupported for g in groups)
        and all(p.spec.nvml_kind == "compute" for p in node.processes)
        and node.scenario.view == "host"
    )


def from_state(node: SimulatedNode, pod: Callable[[int], str | None], endpoints: tuple[Endpoint, ...]) -> Moment:
    """A `plain` node's moment from its simulator's state: what NVML's memory v2 and process lists report of
    each card that is not lost, and each process's pod as the host sees it (`pod`)."""
    node.sync()
    gpus = tuple(
        GpuMemory(gpu.index, gpu.uuid, gpu.name, gpu.used_bytes, gpu.free_bytes, gpu.reserved_bytes)
        for gpu in node.gpus
        if not gpu.lost
    )
    held = tuple(
        Held(pid, gpu.index, pod(pid), size) for gpu in node.gpus if not gpu.lost for pid, size in gpu.held.items()
    )
    return Moment(node.timestamp, gpus, held, endpoints)
