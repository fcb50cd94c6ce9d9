"""The measured bar of one GPU from a sample: each process, memory no process accounts for, reserved, free."""

from __future__ import annotations

from gpumem_tui.diagnosis.history import History
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.models import GpuRecord, ProcessRecord, Sample
from gpumem_tui.records import Record
from gpumem_tui.sources.placement import device_gpus


class MeasuredSlice(Record):
    """One slice of a GPU's measured memory."""

    name: str
    kind: str  # process | engine | unattributed | driver | free
    bytes: int
    pid: int | None = None


def gpu_processes(sample: Sample, index: int) -> list[ProcessRecord]:
    return sorted((p for p in sample.processes if p.gpu_index == index), key=lambda p: -(p.gpu_memory_bytes or 0))


def engine_pids(sample: Sample) -> set[int]:
    return {pid for endpoint in sample.engines for pid in endpoint.pids}


def endpoint_gpus(sample: Sample, endpoint: EndpointStatus, history: History | None = None) -> list[int]:
    """GPUs the endpoint's processes hold memory on (or may: NVML does not always say how much, as for host
    pids seen from a container), in order; when they hold none now (the engine exited, its GPU was lost),
    those the history last saw them on. An endpoint known by no pid, only by the GPUs it names (a node read from
    Prometheus, where dcgm-exporter attributes GPUs to its pod), is on those GPUs."""
    if not endpoint.pids and endpoint.devices:  # no pids (a node read from Prometheus): the GPUs it names
        return device_gpus(endpoint.devices, sample.gpus)
    pids = set(endpoint.pids)
    held = sorted({p.gpu_index for p in sample.processes if p.pid in pids and p.gpu_memory_bytes != 0})
    if held or history is None:
        return held
    return sorted({gpu for gpu, pid in history.process_points if pid in pids})


def served_records(sample: Sample) -> list[tuple[EndpointStatus, EngineRecord | None]]:
    """Each endpoint with each record it gave (one pair with None for an endpoint that gave none)."""
    out: list[tuple[EndpointStatus, EngineRecord | None]] = []
    for endpoint in sample.engines:
        out += [(endpoint, record) for record in endpoint.records] or [(endpoint, None)]
    return out


def engine_on(
    sample: Sample, index: int, records: list[tuple[EndpointStatus, EngineRecord | None]]
) -> tuple[EndpointStatus, EngineRecord] | None:
    """The engine serving on GPU `index` (`records`: `served_records(sample)`): the first record of an
    endpoint whose pids are there; on a node of one GPU and one record, that record."""
    pids = {p.pid for p in sample.processes if p.gpu_index == index}
    for endpoint, record in records:
        if record is not None and pids & set(endpoint.pids):
            return endpoint, record
    if len(records) == 1 and len(sample.gpus) == 1:
        endpoint, record = records[0]
        return (endpoint, record) if record is not None else None
    return None


def gpu_listing(indices: list[int]) -> str:
    """`GPU 0`, `GPU 0, 1`; `GPU ?` when none is known (an endpoint given without its pids)."""
    return "GPU " + (", ".join(str(i) for i in indices) if indices else "?")


def measured_slices(sample: Sample, gpu: GpuRecord) -> list[MeasuredSlice]:
    """Slices that sum to the card's total (when NVML reports it); engines are told apart from others."""
    engines = engine_pids(sample)
    slices = [
        MeasuredSlice(
            name=_label(p), kind="engine" if p.pid in engines else "process", bytes=p.gpu_memory_bytes or 0, pid=p.pid
        )
        for p in gpu_processes(sample, gpu.index)
        if p.gpu_memory_bytes
    ]
    used = gpu.memory_used_bytes or 0
    unattributed = used - sum(s.bytes for s in slices)
    if unattributed > 0:
        slices.append(MeasuredSlice(name="no process", kind="unattributed", bytes=unattributed))
    if gpu.memory_reserved_bytes:
        slices.append(MeasuredSlice(name="driver reserved", kind="driver", bytes=gpu.memory_reserved_bytes))
    if gpu.memory_free_bytes is not None:
        slices.append(MeasuredSlice(name="free", kind="free", bytes=gpu.memory_free_bytes))
    return slices


def _label(process: ProcessRecord) -> str:
    return process.name or f"pid {process.pid}"
