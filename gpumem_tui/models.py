"""Frozen records of one sample of a node: its GPUs, their processes, the host, engines and source errors."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from gpumem_tui.engine_records import EndpointStatus

ProcessKind = Literal["compute", "graphics", "compute+graphics"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class MigInstance(_Record):
    """One MIG GPU instance of a card in MIG mode, with its own slice of memory."""

    gpu_instance_id: int
    name: str | None = None
    uuid: str | None = None
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_free_bytes: int | None = None


class GpuRecord(_Record):
    """One GPU as NVML reports it. A field the driver does not report is None; a lost GPU keeps its index."""

    index: int
    uuid: str | None = None
    name: str | None = None
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_free_bytes: int | None = None
    memory_reserved_bytes: int | None = None
    """Memory the driver sets aside (NVML memory v2 only); v1 counts it inside `used`."""
    utilization_gpu_percent: int | None = None
    utilization_memory_percent: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    mig_enabled: bool | None = None
    mig_instances: list[MigInstance] = []
    lost: bool = False
    """The GPU stopped answering (fell off the bus, or an unknown driver error): its readings are gone."""
    error: str | None = None


class ProcessInfo(_Record):
    """What the host knows about a pid; a pid it cannot see carries only `visible=False` and a note."""

    pid: int
    name: str | None = None
    user: str | None = None
    cmdline: list[str] | None = None
    host_rss_bytes: int | None = None
    cpu_percent: float | None = None
    visible: bool = True
    note: str | None = None


class ProcessRecord(_Record):
    """One process on one GPU: NVML's reading (pid, memory) joined with the host's (name, user, RSS)."""

    pid: int
    gpu_index: int
    kind: ProcessKind = "compute"
    gpu_memory_bytes: int | None = None
    gpu_instance_id: int | None = None
    """The MIG GPU instance the process runs in, when the card is in MIG mode."""
    name: str | None = None
    user: str | None = None
    cmdline: list[str] | None = None
    host_rss_bytes: int | None = None
    cpu_percent: float | None = None
    visible: bool | None = None
    """Whether the pid is visible in this PID namespace (the driver reports host PIDs inside containers)."""
    note: str | None = None


class HostRecord(_Record):
    """The host's memory and CPU."""

    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_available_bytes: int | None = None
    swap_total_bytes: int | None = None
    swap_used_bytes: int | None = None
    cpu_percent: float | None = None
    cpu_count: int | None = None


class SourceError(_Record):
    """Something one source could not read, in plain words, with what to try."""

    source: str
    """`nvml`, `host`, `engine`, `replay`."""
    message: str
    hint: str | None = None
    gpu_index: int | None = None


class Sample(_Record):
    """Everything read from a node at one moment."""

    timestamp: float
    """Seconds since the Unix epoch (UTC)."""
    hostname: str
    source: str
    """Where the sample came from: `nvml`, `demo:SCENARIO`, `replay:FILE`."""
    gpus: list[GpuRecord] = []
    processes: list[ProcessRecord] = []
    host: HostRecord | None = None
    engines: list[EndpointStatus] = []
    errors: list[SourceError] = []
