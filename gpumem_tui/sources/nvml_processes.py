"""GPU process lists read at the C level through the bound NVML module, with this module's own entry layouts.

The binding's `nvmlDeviceGet*RunningProcesses` reads every `_v3` entry as the struct of its own release, and
drivers disagree (early R535 drivers write 32-byte entries where nvidia-ml-py 12.550+ reads 24). So the
function pointers are called here, and an entry's stride is measured from the bytes the driver writes (as
nvitop does, nvitop #226). A card in MIG mode is read MIG device by MIG device. Why, in full:
docs/design/node-sources.md.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpumem_tui.models import MigInstance, ProcessKind, ProcessRecord

SUCCESS, INSUFFICIENT_SIZE, FUNCTION_NOT_FOUND = 0, 7, 13
NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF
"""usedGpuMemory when the driver cannot say (a MIG card's own list as root, Windows WDDM)."""
NO_INSTANCE = 0xFFFFFFFF
"""gpuInstanceId / computeInstanceId of a process on a card that is not in MIG mode."""

LISTS: tuple[tuple[ProcessKind, str], ...] = (
    ("compute", "nvmlDeviceGetComputeRunningProcesses"),
    ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
    ("mps", "nvmlDeviceGetMPSComputeRunningProcesses"),
)
"""Kind of process -> the NVML call listing it. Under MPS the compute list has the server
(nvidia-cuda-mps-server) and the MPS list the clients, each with the memory of its own context."""
SUFFIXES = ("_v3", "_v2", "")
WIDEST = 32
"""The largest entry any driver writes: buffers are sized for it whatever the layout, so a wrong guess can
misread but never overrun."""
TRIES = 4
"""Times the fill call is retried when the list outgrew its buffer between the calls."""


class _EntryV1(ctypes.Structure):
    """nvmlProcessInfo_v1_t: the unversioned calls (16 bytes)."""

    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


class _EntryV2(ctypes.Structure):
    """nvmlProcessInfo_v2_t: the `_v2` calls, and `_v3` on every driver but early R535 (24 bytes)."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    ]


class _EntryR535(ctypes.Structure):
    """The `_v3` entry of R535 drivers 535.43 to 535.86 (32 bytes: confidential-computing memory added)."""

    _fields_ = [*_EntryV2._fields_, ("usedGpuCcProtectedMemory", ctypes.c_ulonglong)]


ENTRIES: dict[int, type[ctypes.Structure]] = {ctypes.sizeof(e): e for e in (_EntryV1, _EntryV2, _EntryR535)}
STRIDES = {"": (16,), "_v2": (24,), "_v3": (24, 32)}
"""The strides a probe may find per call version (nvml.h); any other measure (a list that changed between
the two probe calls) is no measure, and the exported symbols decide that time."""


@dataclass(frozen=True)
class Entry:
    """One process as a list reports it; None where the driver cannot say."""

    pid: int
    memory_bytes: int | None
    gpu_instance_id: int | None
    compute_instance_id: int | None


@dataclass(frozen=True)
class MigDevice:
    """One MIG device: one compute instance of one GPU instance, with its own NVML handle."""

    handle: Any
    gpu_instance_id: int | None
    compute_instance_id: int | None


class ProcessLists:
    """Reads one card's process lists through a bound NVML module. The call version per list and the entry
    layout per version are found once and kept, so a driver without `_v3` is not asked for it every sample.

    `call(fn, *args, what=...)` is the source's NVML call: None where a reading is missing or failed (a
    failure recorded under `what`), its own exception where the card is lost; `text(fn, handle, what)` reads
    a string the card reports (a name, a UUID) even where it is not UTF-8."""

    def __init__(self, nvml: Any, call: Callable[..., Any], text: Callable[[Any, Any, str], str | None]):
        self._nvml = nvml
        self._call = call
        self._text = text
        self._functions: dict[str, tuple[str, Any] | None] = {}
        """List call -> (version suffix, function pointer), or None where the driver has no version of it."""
        self._strides: dict[str, int] = {}
        """Version suffix -> bytes per entry, as measured."""
        self._guesses: dict[str, int] = {}
        """Version suffix -> bytes per entry, from the exported symbols (when a probe could not tell)."""

    # Cards and MIG devices.
    def processes(self, handle: Any, index: int, migs: list[MigDevice]) -> list[ProcessRecord]:
        """Every process on one card; on a card in MIG mode, those of each MIG device (the card's own list
        only when no MIG device could be read)."""
        merged: dict[tuple[int, int | None, int | None], ProcessRecord] = {}
        for device in migs or [MigDevice(handle, None, None)]:
            for kind, base in LISTS:
                what = f"{kind} process list" + _where(device)
                for entry in self._call(self.entries, device.handle, base, what=what) or []:
                    record = _record(entry, index, kind, device)
                    key = (record.pid, record.gpu_instance_id, record.compute_instance_id)
                    merged[key] = _merge(merged.get(key), record)
        return list(merged.values())

    def mig_devices(self, handle: Any) -> list[MigDevice]:
        """The card's MIG devices with their GPU and compute instance ids, in NVML's order."""
        nvml, devices = self._nvml, []
        for slot in range(self._call(nvml.nvmlDeviceGetMaxMigDeviceCount, handle, what="MIG device count") or 0):
            mig = self._call(nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, slot, what=f"MIG device {slot}")
            if mig is not None:
                devices.append(
                    MigDevice(
                        mig,
                        self._call(nvml.nvmlDeviceGetGpuInstanceId, mig, what=f"MIG device {slot} GPU instance id"),
                        self._call(
                            nvml.nvmlDeviceGetComputeInstanceId, mig, what=f"MIG device {slot} compute instance id"
                        ),
                    )
                )
        return devices

    def mig_instances(self, devices: list[MigDevice]) -> list[MigInstance]:
        """One record per GPU instance with its compute instance ids: every compute instance reports the
        instance's memory, which is read once, from its first MIG device. A MIG device whose instance id the
        driver would not give is an instance of its own, id None: its memory is still shown."""
        nvml = self._nvml
        by_instance: dict[int | tuple[str, int], list[MigDevice]] = {}
        for slot, device in enumerate(devices):
            key = device.gpu_instance_id if device.gpu_instance_id is not None else ("unknown", slot)
            by_instance.setdefault(key, []).append(device)
        instances = []
        for members in by_instance.values():
            first, gpu_instance_id = members[0].handle, members[0].gpu_instance_id
            where = f"MIG {'?' if gpu_instance_id is None else gpu_instance_id}"
            memory = self._call(nvml.nvmlDeviceGetMemoryInfo, first, what=f"{where} memory")
            uuids = [self._text(nvml.nvmlDeviceGetUUID, m.handle, f"{where} UUID") for m in members]
            instances.append(
                MigInstance(
                    gpu_instance_id=gpu_instance_id,
                    compute_instance_ids=sorted(
                        m.compute_instance_id for m in members if m.compute_instance_id is not None
                    ),
                    name=self._text(nvml.nvmlDeviceGetName, first, f"{where} name"),
                    uuid=uuids[0],
                    device_uuids=[uuid for uuid in uuids if uuid],
                    memory_total_bytes=None if memory is None else memory.total,
                    memory_used_bytes=None if memory is None else memory.used,
                    memory_free_bytes=None if memory is None else memory.free,
                )
            )
        return instances

    # One list.
    def entries(self, handle: Any, base: str) -> list[Entry]:
        """One list of one device, by the two-call protocol; a refusal raises the module's NVMLError."""
        found = self._function(base)
        if found is None:
            raise self._nvml.NVMLError(FUNCTION_NOT_FOUND)
        suffix, fn = found
        count = ctypes.c_uint(0)
        code = fn(handle, ctypes.byref(count), None)
        if code == SUCCESS:
            return []
        for _ in range(TRIES):
            if code != INSUFFICIENT_SIZE:
                raise self._nvml.NVMLError(code)
            room = count.value * 2 + 5  # room for processes started between the calls, as the binding does
            code, count, raw = self._fill(fn, handle, room, 0x00)
            if code != SUCCESS:
                continue
            stride = self._strides.get(suffix) or self._probe(fn, handle, room, suffix, count.value, raw)
            return [_entry(raw, i * stride, ENTRIES[stride]) for i in range(count.value)]
        raise self._nvml.NVMLError(code)

    def _fill(self, fn: Any, handle: Any, room: int, fill: int) -> tuple[int, ctypes.c_uint, bytes]:
        buffer = ctypes.create_string_buffer(room * WIDEST)
        ctypes.memset(buffer, fill, len(buffer))
        count = ctypes.c_uint(room)
        code = fn(handle, ctypes.byref(count), buffer)
        return code, count, buffer.raw

    def _probe(self, fn: Any, handle: Any, room: int, suffix: str, count: int, zeros: bytes) -> int:
        """Bytes per entry: where the 0x00-filled and the 0xFF-filled buffers stop agreeing (module doc)."""
        code, again, ones = self._fill(fn, handle, room, 0xFF)
        if code == SUCCESS and again.value == count and count:
            written = 1 + max((i for i in range(len(zeros)) if zeros[i] == ones[i]), default=-1)
            stride, rest = divmod(written, count)
            if not rest and stride in STRIDES[suffix]:
                self._strides[suffix] = stride
                return stride
        return self._guess(suffix)

    def _guess(self, suffix: str) -> int:
        """nvitop's symbol tree: `_v3` entries are 32 bytes on drivers that export the confidential-computing
        memory call but not yet the process detail list (535.43 to 535.86), else 24."""
        if suffix not in self._guesses:
            stride = STRIDES[suffix][0]
            if suffix == "_v3" and self._has("nvmlDeviceGetConfComputeMemSizeInfo"):
                stride = 24 if self._has("nvmlDeviceGetRunningProcessDetailList") else 32
            self._guesses[suffix] = stride
        return self._guesses[suffix]

    def _function(self, base: str) -> tuple[str, Any] | None:
        """The newest version of a list call the driver exports, looked up once."""
        if base not in self._functions:
            self._functions[base] = next(
                ((suffix, fn) for suffix in SUFFIXES if (fn := self._pointer(base + suffix)) is not None), None
            )
        return self._functions[base]

    def _has(self, name: str) -> bool:
        return self._pointer(name) is not None

    def _pointer(self, name: str) -> Any:
        try:
            return self._nvml._nvmlGetFunctionPointer(name)
        except self._nvml.NVMLError as exc:
            if exc.value == FUNCTION_NOT_FOUND:
                return None
            raise


def _entry(raw: bytes, offset: int, layout: type[ctypes.Structure]) -> Entry:
    item: Any = layout.from_buffer_copy(raw, offset)
    gi = getattr(item, "gpuInstanceId", NO_INSTANCE)
    ci = getattr(item, "computeInstanceId", NO_INSTANCE)
    return Entry(
        pid=item.pid,
        memory_bytes=None if item.usedGpuMemory == NOT_AVAILABLE else item.usedGpuMemory,
        gpu_instance_id=None if gi == NO_INSTANCE else gi,
        compute_instance_id=None if ci == NO_INSTANCE else ci,
    )


def _where(device: MigDevice) -> str:
    """` of MIG 1.0`: which MIG device a list belongs to, for an error about it ("" for a whole card)."""
    if device.gpu_instance_id is None and device.compute_instance_id is None:
        return ""
    gi, ci = (("?" if i is None else i) for i in (device.gpu_instance_id, device.compute_instance_id))
    return f" of MIG {gi}.{ci}"


def _record(entry: Entry, index: int, kind: ProcessKind, device: MigDevice) -> ProcessRecord:
    """The entry's own instance ids; where its layout has none (16-byte entries), the MIG device's."""
    return ProcessRecord(
        pid=entry.pid,
        gpu_index=index,
        kind=kind,
        gpu_memory_bytes=entry.memory_bytes,
        gpu_instance_id=entry.gpu_instance_id if entry.gpu_instance_id is not None else device.gpu_instance_id,
        compute_instance_id=(
            entry.compute_instance_id if entry.compute_instance_id is not None else device.compute_instance_id
        ),
    )


def _merge(seen: ProcessRecord | None, new: ProcessRecord) -> ProcessRecord:
    """One pid in two lists is one process: its memory is counted once (the larger reading), and its kind
    names both (`compute+graphics`), or `mps` for an MPS client that the compute list names too."""
    if seen is None:
        return new
    sizes = [s for s in (seen.gpu_memory_bytes, new.gpu_memory_bytes) if s is not None]
    kinds = {*seen.kind.split("+"), *new.kind.split("+")}
    kind: ProcessKind = "mps" if "mps" in kinds else "compute+graphics" if len(kinds) > 1 else seen.kind
    return seen.model_copy(update={"kind": kind, "gpu_memory_bytes": max(sizes) if sizes else None})
