"""A fake NVML module driven by the simulated node: the calls the NVML source makes, with pynvml's own
exception classes and constants, so the real source code runs over it, error paths included.

The error classes are copied from the `pynvml` module handed in (only `sources/nvml.py` imports it):
`FakeNvml(node, real_module())`. Faults are injected per call and per GPU; a call can be hidden to
look like an older nvidia-ml-py that lacks it.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType, SimpleNamespace
from typing import Any

from gpumem_tui.demo.gpu import SimGpu
from gpumem_tui.demo.node import SimulatedNode
from gpumem_tui.units import MIB

NO_INSTANCE = 0xFFFFFFFF
DRIVER_VERSION = "570.124.06"


class _Handle:
    """A device handle: a whole GPU, or one MIG instance of it (`slot`)."""

    def __init__(self, gpu: SimGpu, slot: int | None = None):
        self.gpu, self.slot = gpu, slot


class FakeNvml:
    """Looks like the `pynvml` module to the NVML source; answers from a SimulatedNode."""

    # Copied from the module handed in (all of its NVML_* and NVMLError* names); these are the ones used here.
    NVMLError_Uninitialized: type[Exception]
    NVMLError_GpuIsLost: type[Exception]
    NVMLError_NotSupported: type[Exception]
    NVMLError_InvalidArgument: type[Exception]
    NVMLError_FunctionNotFound: type[Exception]
    NVMLError_NotFound: type[Exception]
    NVML_DEVICE_MIG_ENABLE: int
    NVML_DEVICE_MIG_DISABLE: int

    def __init__(self, node: SimulatedNode, pynvml_module: ModuleType):
        self._node = node
        for name in dir(pynvml_module):
            if name.startswith(("NVML_", "NVMLError", "NVMLLibraryMismatchError", "nvmlMemory_v2")):
                setattr(self, name, getattr(pynvml_module, name))
        self._faults: dict[str, tuple[type[BaseException], int | None]] = {}
        self._initialised = False
        self.calls = 0
        for attr in dir(type(self)):
            if attr.startswith("_nvml"):
                setattr(self, attr[1:], self._guard(attr[1:], getattr(self, attr)))

    def inject(self, function: str, error: type[BaseException], gpu: int | None = None) -> None:
        """Make `function` raise `error` (a pynvml NVMLError_* class), on every GPU or only on `gpu`."""
        self._faults[function] = (error, gpu)

    def clear(self, function: str) -> None:
        self._faults.pop(function, None)

    def hide(self, function: str) -> None:
        """Remove a call, as an older nvidia-ml-py would not have it."""
        delattr(self, function)

    def _guard(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if name != "nvmlInit" and not self._initialised:
                raise self.NVMLError_Uninitialized()
            fault = self._faults.get(name)
            handle = args[0] if args and isinstance(args[0], _Handle) else None
            if fault and (fault[1] is None or (handle is not None and handle.gpu.index == fault[1])):
                raise fault[0]()
            if handle is not None and handle.gpu.lost:
                raise self.NVMLError_GpuIsLost()
            self._node.sync()
            return fn(*args, **kwargs)

        return call

    def _unsupported(self, handle: _Handle, reading: str) -> None:
        if reading in handle.gpu.unsupported:
            raise self.NVMLError_NotSupported()

    def _nvmlInit(self) -> None:
        self._initialised = True

    def _nvmlShutdown(self) -> None:
        self._initialised = False

    def _nvmlSystemGetDriverVersion(self) -> str:
        return DRIVER_VERSION

    def _nvmlDeviceGetCount(self) -> int:
        return len(self._node.gpus)

    def _nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        if not 0 <= index < len(self._node.gpus):
            raise self.NVMLError_InvalidArgument()
        gpu = self._node.gpus[index]
        if gpu.lost:
            raise self.NVMLError_GpuIsLost()
        return _Handle(gpu)

    def _nvmlDeviceGetName(self, handle: _Handle) -> str:
        if handle.slot is None:
            return handle.gpu.name
        return f"{handle.gpu.name} MIG {handle.gpu.mig_instances_mib[handle.slot] // 1024}gb"

    def _nvmlDeviceGetUUID(self, handle: _Handle) -> str:
        return handle.gpu.uuid if handle.slot is None else f"MIG-{handle.gpu.uuid[4:]}-{handle.slot}"

    def _nvmlDeviceGetMemoryInfo(self, handle: _Handle, version: int | None = None) -> SimpleNamespace:
        gpu = handle.gpu
        if handle.slot is not None:
            total = gpu.mig_instances_mib[handle.slot] * MIB
            used = sum(held for pid, held in gpu.held.items() if self._instance(pid) == handle.slot)
            return SimpleNamespace(total=total, used=used, free=total - used)
        if version:
            if "memory_v2" in gpu.unsupported:
                raise self.NVMLError_FunctionNotFound()
            return SimpleNamespace(
                version=version,
                total=gpu.total_bytes,
                reserved=gpu.reserved_bytes,
                free=gpu.free_bytes,
                used=gpu.used_bytes,
            )
        return SimpleNamespace(total=gpu.total_bytes, free=gpu.free_bytes, used=gpu.total_bytes - gpu.free_bytes)

    def _nvmlDeviceGetUtilizationRates(self, handle: _Handle) -> SimpleNamespace:
        self._unsupported(handle, "utilization")
        busy = handle.gpu.utilization_percent
        return SimpleNamespace(gpu=busy, memory=round(busy * 0.6))

    def _nvmlDeviceGetTemperatureV(self, handle: _Handle, sensor: int) -> int:  # noqa: ARG002 (NVML's signature; one sensor)
        self._unsupported(handle, "temperature")
        return handle.gpu.temperature_c

    def _nvmlDeviceGetTemperature(self, handle: _Handle, sensor: int) -> int:
        return self._nvmlDeviceGetTemperatureV(handle, sensor)

    def _nvmlDeviceGetPowerUsage(self, handle: _Handle) -> int:
        self._unsupported(handle, "power")
        return round(handle.gpu.power_w * 1000)

    def _nvmlDeviceGetEnforcedPowerLimit(self, handle: _Handle) -> int:
        self._unsupported(handle, "power")
        return round(handle.gpu.power_limit_w * 1000)

    def _nvmlDeviceGetMigMode(self, handle: _Handle) -> list[int]:
        self._unsupported(handle, "mig")
        mode = self.NVML_DEVICE_MIG_ENABLE if handle.gpu.mig_instances_mib else self.NVML_DEVICE_MIG_DISABLE
        return [mode, mode]

    def _nvmlDeviceGetMaxMigDeviceCount(self, handle: _Handle) -> int:
        return 7 if handle.gpu.mig_instances_mib else 0

    def _nvmlDeviceGetMigDeviceHandleByIndex(self, handle: _Handle, index: int) -> _Handle:
        if index >= len(handle.gpu.mig_instances_mib):
            raise self.NVMLError_NotFound()
        return _Handle(handle.gpu, index)

    def _nvmlDeviceGetGpuInstanceId(self, handle: _Handle) -> int:
        if handle.slot is None:
            raise self.NVMLError_InvalidArgument()
        return handle.slot + 1

    def _nvmlDeviceGetComputeRunningProcesses_v3(self, handle: _Handle) -> list[SimpleNamespace]:
        return self._process_list(handle, "compute")

    def _nvmlDeviceGetComputeRunningProcesses_v2(self, handle: _Handle) -> list[SimpleNamespace]:
        return self._process_list(handle, "compute")

    def _nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: _Handle) -> list[SimpleNamespace]:
        self._unsupported(handle, "graphics")
        return self._process_list(handle, "graphics")

    def _nvmlDeviceGetGraphicsRunningProcesses_v2(self, handle: _Handle) -> list[SimpleNamespace]:
        return self._nvmlDeviceGetGraphicsRunningProcesses_v3(handle)

    def _process_list(self, handle: _Handle, kind: str) -> list[SimpleNamespace]:
        listed = []
        for pid, held in handle.gpu.held.items():
            if kind in self._kind(pid):
                slot = self._instance(pid)
                listed.append(
                    SimpleNamespace(
                        pid=pid,
                        usedGpuMemory=held,
                        computeInstanceId=NO_INSTANCE if slot is None else 0,
                        gpuInstanceId=NO_INSTANCE if slot is None else slot + 1,
                    )
                )
        return listed

    def _kind(self, pid: int) -> str:
        for process in self._node.processes:
            if process.pid == pid:
                return process.spec.nvml_kind
        return "compute"

    def _instance(self, pid: int) -> int | None:
        for process in self._node.processes:
            if process.pid == pid:
                return process.spec.mig_instance
        return None
