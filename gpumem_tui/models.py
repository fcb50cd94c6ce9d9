"""Frozen records of one sample of a node: its GPUs, their processes, the host, engines and source errors."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpumem_tui.engine_records import EndpointStatus
from gpumem_tui.readings import ReadingsRecord, dropped, settle

ProcessKind = Literal["compute", "graphics", "compute+graphics", "mps"]
"""Which NVML lists name the process; `mps`: an MPS client (nvidia-smi's type M), whose MPS server is `compute`."""


class MigInstance(ReadingsRecord):
    """One MIG GPU instance of a card in MIG mode, with its own slice of memory. Its compute instances share
    that memory: each is a MIG device of its own to NVML, and all of them report the instance's memory, which
    is held here once."""

    gpu_instance_id: int | None = None
    """None when the driver would not say (the instance's memory is still shown)."""
    compute_instance_ids: list[int] = []
    name: str | None = None
    uuid: str | None = None
    """The first MIG device's UUID (`MIG-...`)."""
    device_uuids: list[str] = []
    """Every MIG device's UUID, one per compute instance: a container's NVIDIA_VISIBLE_DEVICES may name any."""
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_free_bytes: int | None = None


class GpuRecord(ReadingsRecord):
    """One GPU as NVML reports it. A field the driver does not report is None; a lost GPU keeps its index."""

    index: int
    """NVML's index: the order of PCI bus ids, not necessarily CUDA's (CUDA_DEVICE_ORDER=FASTEST_FIRST)."""
    uuid: str | None = None
    name: str | None = None
    bus_id: str | None = None
    """PCI bus id (`00000000:18:00.0`), as nvidia-smi shows it: names the card whatever the index order."""
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
    """The GPU stopped answering (fell off the bus, or needs a reset): its readings are gone."""
    accessible: bool = True
    """False when NVML counts the GPU but this process may not open it (No Permission on its handle): a
    cgroup or a container's device list (Slurm ConstrainDevices, `docker --gpus`) allows only some of the
    node's GPUs. Not lost: it has no readings here because it belongs to someone else."""
    error: str | None = None
    """Why the GPU has no readings: the driver's words when it is lost or not accessible."""

    @property
    def readable(self) -> bool:
        """Its readings can be had from here: neither lost nor closed to this process."""
        return self.accessible and not self.lost


class ProcessInfo(ReadingsRecord):
    """What the host knows about a pid; a pid it cannot see carries only `visible=False` and a note."""

    pid: int
    name: str | None = None
    user: str | None = None
    cmdline: list[str] | None = None
    host_rss_bytes: int | None = None
    cpu_percent: float | None = None
    visible: bool = True
    note: str | None = None
    pod: str | None = None
    """`namespace/name` of the Kubernetes pod the process runs in (`pod <uid>` when unnamed), from its cgroup."""
    started: float | None = None
    """When the process started, seconds since the Unix epoch (the host's process table)."""


class ProcessRecord(ReadingsRecord):
    """One process on one GPU: NVML's reading (pid, memory) joined with the host's (name, user, RSS)."""

    pid: int
    gpu_index: int
    kind: ProcessKind = "compute"
    gpu_memory_bytes: int | None = None
    gpu_instance_id: int | None = None
    """The MIG GPU instance the process runs in, when the card is in MIG mode."""
    compute_instance_id: int | None = None
    """The compute instance inside that GPU instance (nvidia-smi's CI ID), when the card is in MIG mode."""
    name: str | None = None
    user: str | None = None
    cmdline: list[str] | None = None
    host_rss_bytes: int | None = None
    cpu_percent: float | None = None
    visible: bool | None = None
    """Whether the pid is visible in this PID namespace (the driver reports host PIDs inside containers)."""
    note: str | None = None
    pod: str | None = None
    """`namespace/name` of the Kubernetes pod the process runs in, when its cgroup says so."""
    started: float | None = None
    """When the process started, seconds since the Unix epoch (the host's process table)."""

    @property
    def command(self) -> str:
        """The command line as one line, or the note on a pid not seen here."""
        return " ".join(self.cmdline) if self.cmdline else (self.note or "")

    @property
    def device(self) -> str:
        """Where it runs, as nvidia-smi's GPU, GI ID and CI ID columns say it: `0`, or `0:1.0` (GPU 0, GPU
        instance 1, compute instance 0) on a card in MIG mode."""
        if self.gpu_instance_id is None:
            return str(self.gpu_index)
        compute = "" if self.compute_instance_id is None else f".{self.compute_instance_id}"
        return f"{self.gpu_index}:{self.gpu_instance_id}{compute}"


class HostRecord(ReadingsRecord):
    """The host's memory and CPU."""

    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_available_bytes: int | None = None
    swap_total_bytes: int | None = None
    swap_used_bytes: int | None = None
    cpu_percent: float | None = None
    cpu_count: int | None = None


class SourceError(ReadingsRecord):
    """Something one source could not read, in plain words, with what to try."""

    source: str
    """`nvml`, `host`, `engine`, `replay`."""
    message: str
    hint: str | None = None
    gpu_index: int | None = None


LATEST_TIMESTAMP = 253_402_300_799.0
"""9999-12-31 23:59:59 UTC, the last moment a date can name: a later timestamp is no moment at all."""


class Sample(ReadingsRecord):
    """Everything read from a node at one moment. A number that cannot be a reading (NaN, infinite,
    negative) arrives as missing, and a GPU index reported twice keeps its first card; each such drop is
    noted in `errors`, under the source that reported it. A timestamp that is no moment refuses the sample."""

    timestamp: float = Field(ge=0, le=LATEST_TIMESTAMP, allow_inf_nan=False)
    """Seconds since the Unix epoch (UTC)."""
    hostname: str
    source: str
    """Where the sample came from: `nvml`, `demo:SCENARIO`, `replay:FILE`."""
    driver_version: str | None = None
    """The NVIDIA driver's version as NVML reports it (`570.124.06`)."""
    gpus: list[GpuRecord] = []
    processes: list[ProcessRecord] = []
    host: HostRecord | None = None
    engines: list[EndpointStatus] = []
    errors: list[SourceError] = []

    @model_validator(mode="after")
    def _notes_and_duplicates(self) -> Sample:
        _check(self)
        return self


def _check(sample: Sample) -> None:
    """Note what the records dropped and keep the first of GPUs reported twice, while the sample is built."""
    notes: list[SourceError] = []

    def noted(record, what: str | None, source: str, gpu_index: int | None = None):
        """The record, its drops now said in the sample (so a sample read back equals the one written)."""
        if not record.dropped:
            return record
        message = f"{what}: {dropped(record.dropped)}" if what else dropped(record.dropped)
        notes.append(SourceError(source=source, message=message, gpu_index=gpu_index))
        said = record.model_copy()
        said._dropped = {}
        return said

    gpus, seen = [], set()
    for gpu in sample.gpus:
        if gpu.index in seen:
            notes.append(
                SourceError(
                    source="nvml",
                    gpu_index=gpu.index,
                    message=f"GPU {gpu.index} was reported twice; the second record dropped",
                )
            )
            continue
        seen.add(gpu.index)
        migs = [noted(m, f"GPU {gpu.index}:{m.gpu_instance_id}", "nvml", gpu.index) for m in gpu.mig_instances]
        if any(a is not b for a, b in zip(migs, gpu.mig_instances, strict=True)):
            gpu = gpu.model_copy(update={"mig_instances": migs})
        gpus.append(noted(gpu, f"GPU {gpu.index}", "nvml", gpu.index))
    processes = [noted(p, f"pid {p.pid} on GPU {p.gpu_index}", "nvml", p.gpu_index) for p in sample.processes]
    host = noted(sample.host, None, "host") if sample.host is not None else None
    engines = [noted(status, status.url, "engine") for status in sample.engines]
    if notes:
        settle(
            sample,
            {
                "gpus": gpus,
                "processes": processes,
                "host": host,
                "engines": engines,
                "errors": [*sample.errors, *notes],
            },
        )
