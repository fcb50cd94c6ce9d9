"""A fake libnvidia-ml.so.1 driven by the simulated node: C functions the real `pynvml` binding calls
through ctypes, each returning an nvmlReturn_t and filling the caller's buffers as the driver does.

The binding's own code runs on top of it (struct layouts, two-call process lists, sentinel values, error
classes, string decoding): load it with `sources.nvml.bind(FakeDriver(node))`. What a release exports and
how it lays out process entries follows `driver_abi`; faults are injected per symbol and per GPU as
return codes, and symbols can be hidden as an older driver lacks them.
"""

from __future__ import annotations

import ctypes
import traceback
from collections.abc import Callable
from typing import Any

from gpumem_tui.demo import driver_abi as abi
from gpumem_tui.demo.gpu import SimGpu
from gpumem_tui.demo.node import SimulatedNode
from gpumem_tui.units import MIB

DRIVER_VERSION = "570.124.06"


class _Refused(Exception):
    """Ends one C call early with its return code."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class FakeDriver:
    """Looks like the loaded `CDLL("libnvidia-ml.so.1")` to the binding; answers from a SimulatedNode.

    `root`: the caller's privilege over a MIG card (root, or a container given NVIDIA_MIG_MONITOR_DEVICES):
    the card's own memory and process lists (aggregate only: no per-process memory) are refused otherwise.
    `denied`: NVML indices whose device node this process may not open (a Slurm or container cgroup; the
    scenario's `denied` GPU groups to start with). NVML counts every GPU of the node
    (nvmlDeviceGetCount) but nvmlDeviceGetHandleByIndex returns NVML_ERROR_NO_PERMISSION for those ("the
    user doesn't have permission to talk to this device", nvml.h).
    """

    def __init__(self, node: SimulatedNode, version: str = DRIVER_VERSION, *, root: bool = True):
        self._node = node
        self.version = version
        self.root = root
        self.denied: set[int] = set(node.denied_gpus)
        self.name_bytes: dict[int, bytes] = {}
        """Raw name bytes per GPU index, as a broken VBIOS or driver may report (not valid UTF-8). NVML copies
        the string it holds into the caller's buffer as it is; the binding decodes it as strict UTF-8."""
        self.uuid_bytes: dict[int, bytes] = {}
        """Raw UUID bytes per GPU index, the same way."""
        self.bus_id_bytes: dict[int, bytes] = {}
        """Raw PCI bus id bytes per GPU index (the `busId` of nvmlPciInfo_t), the same way."""
        self.calls = 0
        self.missed: dict[str, int] = {}
        """Symbol lookups that found nothing, by name (each one is a dlsym miss in the binding)."""
        self.crashes: list[str] = []
        """Python errors inside a C function of this fake (a bug here, never a driver behaviour)."""
        self._faults: dict[str, tuple[int, int | None]] = {}
        self._after: dict[str, Callable[..., None]] = {}
        self._exported = abi.exported(version)
        self._inits = 0
        self._symbols: dict[str, Any] = {}
        for name, prototype in abi.PROTOTYPES.items():
            body = getattr(self, "_" + name, None) or self._process_call(name)
            self._symbols[name] = prototype(self._entry(name, body))

    # The library as the binding sees it.
    def __getattr__(self, name: str) -> Any:
        symbols = self.__dict__.get("_symbols", {})
        if name in symbols and name in self.__dict__["_exported"]:
            return symbols[name]
        if name.startswith("nvml"):
            self.__dict__["missed"][name] = self.__dict__["missed"].get(name, 0) + 1
        raise AttributeError(name)

    # Test controls.
    def fail(self, symbol: str, code: int, gpu: int | None = None) -> None:
        """Make `symbol` return `code` on every GPU, or only for handles of GPU `gpu` (the handle call itself
        by its index). The codes mean what nvml.h says: TIMEOUT, INSUFFICIENT_SIZE, NO_DATA, MEMORY and
        UNKNOWN ("any unexpected error") fail one call; GPU_IS_LOST and RESET_REQUIRED are the card gone."""
        self._faults[symbol] = (code, gpu)

    def clear(self, symbol: str) -> None:
        self._faults.pop(symbol, None)

    def after(self, symbol: str, hook: Callable[..., None]) -> None:
        """Run `hook(*args)` after each call of `symbol` that reached the driver: a test's way to change the
        node between two calls (a process list that grows between its count call and its fill call)."""
        self._after[symbol] = hook

    def hide(self, symbol: str) -> None:
        """Stop exporting `symbol`, as an older driver would not have it."""
        self._exported.discard(symbol)

    def _entry(self, name: str, body: Callable[..., None]) -> Callable[..., int]:
        """The C function: checks init, faults and lost cards, then runs `body`; any refusal is its code."""
        needs_init = name not in ("nvmlInitWithFlags", "nvmlInit_v2")
        card = self._card_of(name)
        faults, after, node = self._faults, self._after, self._node

        def call(*args: Any) -> int:
            self.calls += 1
            try:
                if needs_init and self._inits == 0:
                    return abi.ERROR_UNINITIALIZED
                gpu = card(args) if args else None
                fault = faults.get(name) if faults else None
                if fault and (fault[1] is None or (gpu is not None and gpu.index == fault[1])):
                    return fault[0]
                if gpu is not None and gpu.lost:
                    return abi.ERROR_GPU_IS_LOST
                node.sync()
                try:
                    body(*args)
                finally:
                    if after and name in after:
                        after[name](*args)
            except _Refused as refused:
                return refused.code
            except Exception:  # noqa: BLE001 - a Python error must not cross into C as "success"
                self.crashes.append(traceback.format_exc())
                return abi.ERROR_UNKNOWN
            return abi.SUCCESS

        return call

    def _card_of(self, name: str) -> Callable[[tuple[Any, ...]], SimGpu | None]:
        """How a call names the card it is about: its handle argument, the index for
        nvmlDeviceGetHandleByIndex_v2, or no card (a system call, the device count)."""
        if not name.startswith("nvmlDevice") or name == "nvmlDeviceGetCount_v2":
            return lambda _args: None
        if name == "nvmlDeviceGetHandleByIndex_v2":
            gpus = self._node.gpus
            return lambda args: gpus[args[0]] if 0 <= args[0] < len(gpus) else None
        return lambda args: self._device(args[0])[0]

    # Handles: (GPU index + 1) << 8 | (MIG device slot + 1), never 0. A MIG device is one compute instance of
    # one GPU instance (`SimGpu.mig_devices`).
    def _device(self, handle: int | None) -> tuple[SimGpu, int | None]:
        if not handle:
            raise _Refused(abi.ERROR_INVALID_ARGUMENT)
        index, slot = (handle >> 8) - 1, (handle & 0xFF) - 1
        if not 0 <= index < len(self._node.gpus):
            raise _Refused(abi.ERROR_INVALID_ARGUMENT)
        gpu = self._node.gpus[index]
        if slot >= len(gpu.mig_devices):
            raise _Refused(abi.ERROR_INVALID_ARGUMENT)
        return gpu, None if slot < 0 else slot

    @staticmethod
    def _handle(gpu: SimGpu, slot: int | None = None) -> int:
        return (gpu.index + 1) << 8 | (0 if slot is None else slot + 1)

    @staticmethod
    def _put(pointer: int | None, value: ctypes._SimpleCData | ctypes.Structure) -> None:
        if not pointer:
            raise _Refused(abi.ERROR_INVALID_ARGUMENT)
        ctypes.memmove(pointer, ctypes.byref(value), ctypes.sizeof(value))

    def _put_text(self, pointer: int | None, length: int, text: bytes) -> None:
        if not pointer:
            raise _Refused(abi.ERROR_INVALID_ARGUMENT)
        if len(text) + 1 > length:
            raise _Refused(abi.ERROR_INSUFFICIENT_SIZE)
        ctypes.memmove(pointer, text + b"\0", len(text) + 1)

    def _unsupported(self, gpu: SimGpu, reading: str) -> None:
        if reading in gpu.unsupported:
            raise _Refused(abi.ERROR_NOT_SUPPORTED)

    # System.
    def _nvmlInitWithFlags(self, flags: int) -> None:  # noqa: ARG002 (NVML's signature; no flags honoured)
        self._inits += 1

    def _nvmlInit_v2(self) -> None:
        self._inits += 1

    def _nvmlShutdown(self) -> None:
        self._inits = max(0, self._inits - 1)

    def _nvmlSystemGetDriverVersion(self, buffer: int | None, length: int) -> None:
        self._put_text(buffer, length, self.version.encode())

    # Devices.
    def _nvmlDeviceGetCount_v2(self, count: int | None) -> None:
        self._put(count, ctypes.c_uint(len(self._node.gpus)))

    def _nvmlDeviceGetHandleByIndex_v2(self, index: int, device: int | None) -> None:
        if not 0 <= index < len(self._node.gpus):
            raise _Refused(abi.ERROR_INVALID_ARGUMENT)
        if index in self.denied:
            raise _Refused(abi.ERROR_NO_PERMISSION)
        self._put(device, ctypes.c_void_p(self._handle(self._node.gpus[index])))

    def _nvmlDeviceGetName(self, handle: int, buffer: int | None, length: int) -> None:
        gpu, slot = self._device(handle)
        if slot is None:
            name = self.name_bytes.get(gpu.index, gpu.name.encode())
        else:
            # the profile's size as NVIDIA rounds it (40192 MiB is a "40gb" instance), in steps of 5 GB
            size_gb = max(5, 5 * round(gpu.mig_instances_mib[gpu.mig_devices[slot][0]] / 1024 / 5))
            name = f"{gpu.name} MIG {size_gb}gb".encode()
        self._put_text(buffer, length, name)

    def _nvmlDeviceGetUUID(self, handle: int, buffer: int | None, length: int) -> None:
        gpu, slot = self._device(handle)
        if slot is None:
            uuid = self.uuid_bytes.get(gpu.index, gpu.uuid.encode())
        else:
            uuid = f"MIG-{gpu.uuid[4:]}-{slot}".encode()
        self._put_text(buffer, length, uuid)

    def _nvmlDeviceGetPciInfo_v3(self, handle: int, info: int | None) -> None:
        gpu, _ = self._device(handle)
        domain, bus = gpu.index // 16, 0x18 + (gpu.index % 16) * 0x0E
        bus_id = self.bus_id_bytes.get(gpu.index, f"{domain:08X}:{bus:02X}:00.0".encode())
        legacy = f"{domain:04X}:{bus:02X}:00.0".encode()  # nvml.h's legacy format: a 4-digit domain
        self._put(info, abi.PciInfo(busIdLegacy=legacy, domain=domain, bus=bus, device=0, busId=bus_id))

    def _refuse_mig_aggregate(self, gpu: SimGpu, slot: int | None) -> None:
        """nvml.h on the memory and process-list calls: "In MIG mode, if device handle is provided, the API
        returns aggregate information, only if the caller has appropriate privileges"; a MIG device's own
        handle answers anyone."""
        if gpu.mig_instances_mib and slot is None and not self.root:
            raise _Refused(abi.ERROR_NO_PERMISSION)

    def _nvmlDeviceGetMemoryInfo(self, handle: int, memory: int | None) -> None:
        gpu, slot = self._device(handle)
        self._refuse_mig_aggregate(gpu, slot)
        if slot is not None:  # every compute instance of a GPU instance reports the instance's memory
            instance = gpu.mig_devices[slot][0]
            total = gpu.mig_instances_mib[instance] * MIB
            used = sum(held for pid, held in gpu.held.items() if (self._slot_of(pid) or (None,))[0] == instance)
            self._put(memory, abi.Memory(total=total, free=total - used, used=used))
            return
        self._put(memory, abi.Memory(total=gpu.total_bytes, free=gpu.free_bytes, used=gpu.total_bytes - gpu.free_bytes))

    def _nvmlDeviceGetMemoryInfo_v2(self, handle: int, memory: int | None) -> None:
        """nvml.h: ARGUMENT_VERSION_MISMATCH when the caller's struct version is not one this driver knows
        (a fact of the driver, the same for every device); NOT_SUPPORTED from a device that cannot report it
        (a card listing `memory_v2` as unsupported, a MIG device here), while other devices still answer."""
        gpu, slot = self._device(handle)
        if not memory or abi.MemoryV2.from_address(memory).version != abi.MEMORY_V2:
            raise _Refused(abi.ERROR_ARGUMENT_VERSION_MISMATCH)
        self._refuse_mig_aggregate(gpu, slot)
        self._unsupported(gpu, "memory_v2")
        if slot is not None:
            raise _Refused(abi.ERROR_NOT_SUPPORTED)
        self._put(
            memory,
            abi.MemoryV2(
                version=abi.MEMORY_V2,
                total=gpu.total_bytes,
                reserved=gpu.reserved_bytes,
                free=gpu.free_bytes,
                used=gpu.used_bytes,
            ),
        )

    def _nvmlDeviceGetUtilizationRates(self, handle: int, rates: int | None) -> None:
        gpu, _ = self._device(handle)
        self._unsupported(gpu, "utilization")
        if gpu.mig_instances_mib:
            raise _Refused(abi.ERROR_NOT_SUPPORTED)
        busy = gpu.utilization_percent
        self._put(rates, abi.Utilization(gpu=busy, memory=round(busy * 0.6)))

    def _nvmlDeviceGetTemperature(self, handle: int, sensor: int, degrees: int | None) -> None:
        gpu, _ = self._device(handle)
        self._unsupported(gpu, "temperature")
        if sensor != abi.TEMPERATURE_GPU:
            raise _Refused(abi.ERROR_INVALID_ARGUMENT)
        self._put(degrees, ctypes.c_uint(gpu.temperature_c))

    def _nvmlDeviceGetTemperatureV(self, handle: int, reading: int | None) -> None:
        gpu, _ = self._device(handle)
        self._unsupported(gpu, "temperature")
        if not reading or abi.TemperatureV1.from_address(reading).version != abi.TEMPERATURE_V1:
            raise _Refused(abi.ERROR_ARGUMENT_VERSION_MISMATCH)
        asked = abi.TemperatureV1.from_address(reading).sensorType
        self._put(
            reading, abi.TemperatureV1(version=abi.TEMPERATURE_V1, sensorType=asked, temperature=gpu.temperature_c)
        )

    def _nvmlDeviceGetPowerUsage(self, handle: int, milliwatts: int | None) -> None:
        gpu, _ = self._device(handle)
        self._unsupported(gpu, "power")
        self._put(milliwatts, ctypes.c_uint(round(gpu.power_w * 1000)))

    def _nvmlDeviceGetEnforcedPowerLimit(self, handle: int, milliwatts: int | None) -> None:
        gpu, _ = self._device(handle)
        self._unsupported(gpu, "power")
        self._put(milliwatts, ctypes.c_uint(round(gpu.power_limit_w * 1000)))

    # MIG.
    def _nvmlDeviceGetMigMode(self, handle: int, current: int | None, pending: int | None) -> None:
        gpu, slot = self._device(handle)
        self._unsupported(gpu, "mig")
        if slot is not None:
            raise _Refused(abi.ERROR_NOT_SUPPORTED)
        mode = abi.DEVICE_MIG_ENABLE if gpu.mig_instances_mib else abi.DEVICE_MIG_DISABLE
        self._put(current, ctypes.c_uint(mode))
        self._put(pending, ctypes.c_uint(mode))

    def _nvmlDeviceGetMaxMigDeviceCount(self, handle: int, count: int | None) -> None:
        gpu, _ = self._device(handle)
        self._unsupported(gpu, "mig")
        self._put(count, ctypes.c_uint(7 if gpu.mig_instances_mib else 0))

    def _nvmlDeviceGetMigDeviceHandleByIndex(self, handle: int, index: int, device: int | None) -> None:
        gpu, slot = self._device(handle)
        if slot is not None:
            raise _Refused(abi.ERROR_INVALID_ARGUMENT)
        if index >= len(gpu.mig_devices):
            raise _Refused(abi.ERROR_NOT_FOUND)
        self._put(device, ctypes.c_void_p(self._handle(gpu, index)))

    def _nvmlDeviceGetGpuInstanceId(self, handle: int, gpu_instance: int | None) -> None:
        gpu, slot = self._device(handle)
        if slot is None:
            raise _Refused(abi.ERROR_INVALID_ARGUMENT)
        self._put(gpu_instance, ctypes.c_uint(gpu.mig_devices[slot][0] + 1))

    def _nvmlDeviceGetComputeInstanceId(self, handle: int, compute_instance: int | None) -> None:
        gpu, slot = self._device(handle)
        if slot is None:
            raise _Refused(abi.ERROR_INVALID_ARGUMENT)
        self._put(compute_instance, ctypes.c_uint(gpu.mig_devices[slot][1]))

    def _nvmlDeviceGetConfComputeMemSizeInfo(self, handle: int, info: int | None) -> None:  # noqa: ARG002
        raise _Refused(abi.ERROR_NOT_SUPPORTED)

    def _nvmlDeviceGetRunningProcessDetailList(self, handle: int, plist: int | None) -> None:  # noqa: ARG002
        raise _Refused(abi.ERROR_NOT_SUPPORTED)

    # Process lists: two calls, the first asks how many; entries laid out as this release writes them.
    def _process_call(self, name: str) -> Callable[..., None]:
        stem = name.removeprefix("nvmlDeviceGet").split("RunningProcesses")[0]
        suffix = name.split("RunningProcesses")[1]
        kind = abi.LIST_KINDS[stem]

        def listing(handle: int, count: int | None, infos: int | None) -> None:
            gpu, slot = self._device(handle)
            if kind == "graphics":
                self._unsupported(gpu, "graphics")
            entry = {"": abi.ProcessInfoV1, "_v2": abi.ProcessInfoV2}.get(suffix) or abi.v3_entry(self.version)
            rows = self._rows(gpu, slot, kind)
            if not count:
                raise _Refused(abi.ERROR_INVALID_ARGUMENT)
            room = ctypes.c_uint.from_address(count).value
            self._put(count, ctypes.c_uint(len(rows)))
            if len(rows) > room or (rows and not infos):
                raise _Refused(abi.ERROR_INSUFFICIENT_SIZE)
            size = ctypes.sizeof(entry)
            for i, (pid, held, gi, ci) in enumerate(rows):
                values = {"pid": pid, "usedGpuMemory": held}
                if entry is not abi.ProcessInfoV1:
                    values.update(gpuInstanceId=gi, computeInstanceId=ci)
                ctypes.memmove(infos + i * size, ctypes.byref(entry(**values)), size)  # type: ignore[operator]

        return listing

    def _rows(self, gpu: SimGpu, slot: int | None, kind: str) -> list[tuple[int, int, int, int]]:
        """(pid, bytes, GI id, CI id) of the processes of `kind` on this card or MIG device. A MIG card's
        parent handle gives no per-process memory as root and is refused to other users; each MIG device
        lists its own processes with their memory, to any user (nvml.h)."""
        self._refuse_mig_aggregate(gpu, slot)
        rows = []
        for pid, held in gpu.held.items():
            if kind not in self._kind(pid).split("+"):
                continue
            owner = self._slot_of(pid)
            if slot is not None and owner != gpu.mig_devices[slot]:
                continue
            if owner is None:
                rows.append((pid, held, abi.NO_INSTANCE, abi.NO_INSTANCE))
            else:
                memory = abi.VALUE_NOT_AVAILABLE if slot is None else held
                rows.append((pid, memory, owner[0] + 1, owner[1]))
        return rows

    def _kind(self, pid: int) -> str:
        for process in self._node.processes:
            if process.pid == pid:
                return process.spec.nvml_kind
        return "compute"

    def _slot_of(self, pid: int) -> tuple[int, int] | None:
        """(GPU instance, compute instance) the pid runs in; None outside MIG."""
        for process in self._node.processes:
            if process.pid == pid and process.spec.mig_instance is not None:
                return process.spec.mig_instance, process.spec.mig_compute_instance or 0
        return None
