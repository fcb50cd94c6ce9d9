"""The measured bar of one GPU from a sample: each process, memory no process accounts for, reserved, free."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from gpumem_tui.models import GpuRecord, ProcessRecord, Sample


class MeasuredSlice(BaseModel):
    """One slice of a GPU's measured memory."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: str  # process | engine | unattributed | driver | free
    bytes: int
    pid: int | None = None


def gpu_processes(sample: Sample, index: int) -> list[ProcessRecord]:
    return sorted((p for p in sample.processes if p.gpu_index == index), key=lambda p: -(p.gpu_memory_bytes or 0))


def engine_pids(sample: Sample) -> set[int]:
    return {pid for endpoint in sample.engines for pid in endpoint.pids}


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


def unattributed_bytes(sample: Sample, gpu: GpuRecord) -> int:
    return sum(s.bytes for s in measured_slices(sample, gpu) if s.kind == "unattributed")


def _label(process: ProcessRecord) -> str:
    return process.name or f"pid {process.pid}"
