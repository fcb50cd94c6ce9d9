"""NVML source: per-GPU memory, utilization, temperature, power, MIG and processes, via nvidia-ml-py.

The NVML module is handed in: the installed `pynvml` on a live node, or a private copy of that same
binding loaded over another C library (`bind`: the simulated node's fake driver), so tests and the demo
run the binding's own code as well as this one. This is the only module importing pynvml.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pynvml

from gpumem_tui.models import GpuRecord, ProcessRecord, SourceError
from gpumem_tui.sources.nvml_processes import MigDevice, ProcessLists

# Errors that make the whole source unavailable: (reason, what to try).
_UNAVAILABLE = {
    "NVMLError_LibraryNotFound": (
        "NVML library (libnvidia-ml.so.1) not found",
        "run on a node with the NVIDIA driver installed, or try `--demo healthy-8b` for a simulated node",
    ),
    "NVMLError_DriverNotLoaded": (
        "the NVIDIA driver is not loaded",
        "check that `nvidia-smi` works (load the kernel module or reboot), or try `--demo healthy-8b`",
    ),
    "NVMLError_NoPermission": (
        "no permission to use NVML",
        "run as a user who can open /dev/nvidia* (in a container: pass the GPUs in), or try `--demo`",
    ),
    "NVMLError_LibRmVersionMismatch": (
        "the NVML library and the kernel driver are different versions",
        "reboot or reload the driver after an upgrade, or try `--demo healthy-8b`",
    ),
}
# Errors that mean "this reading does not exist here": the field becomes None.
_MISSING = (
    "NVMLError_NotSupported",
    "NVMLError_FunctionNotFound",
    "NVMLError_NotFound",
    "NVMLError_NoData",
    "NVMLError_NoPermission",
    "NVMLError_ArgumentVersionMismatch",
)
# Errors that mean the device itself stopped answering.
_LOST = ("NVMLError_GpuIsLost", "NVMLError_Unknown", "NVMLError_ResetRequired")


class NvmlUnavailable(RuntimeError):
    """NVML cannot be used on this node at all: a plain reason and what to try."""

    def __init__(self, reason: str, hint: str):
        super().__init__(f"NVML unavailable: {reason}; {hint}")
        self.reason, self.hint = reason, hint


class _DeviceLost(Exception):
    """Raised inside one device's read to abandon it; carries the driver's words."""


@dataclass
class NvmlReading:
    """One pass over every device: GPU records, their processes (GPU fields only), and what went wrong."""

    driver_version: str | None = None
    gpus: list[GpuRecord] = field(default_factory=list)
    processes: list[ProcessRecord] = field(default_factory=list)
    errors: list[SourceError] = field(default_factory=list)


def real_module() -> ModuleType:
    """The installed `pynvml` (nvidia-ml-py): what a live node uses, and whose error classes a fake copies."""
    return pynvml


_copies = itertools.count()


def bind(library: Any) -> ModuleType:
    """A private copy of the installed binding whose C library is `library` instead of
    libnvidia-ml.so.1: the binding keeps its library handle in the module attribute `nvmlLib` (and caches
    function pointers per module), so each copy serves one library and two never share a cache."""
    name = f"_gpumem_pynvml_{next(_copies)}"
    spec = importlib.util.spec_from_file_location(name, pynvml.__file__)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load a copy of the NVML binding from {pynvml.__file__}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # the binding names its own error classes through sys.modules while it loads
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    module.nvmlLib = library
    return module


def _classes(nvml: Any, names: tuple[str, ...]) -> tuple[type[BaseException], ...]:
    return tuple(getattr(nvml, name) for name in names if hasattr(nvml, name))


class NvmlSource:
    """Reads every GPU through an NVML module; a field one card lacks is None, a lost card is marked lost."""

    def __init__(self, nvml: Any | None = None):
        self._nvml = nvml if nvml is not None else pynvml
        self._missing = _classes(self._nvml, _MISSING)
        self._lost = _classes(self._nvml, _LOST)
        self._not_found = _classes(self._nvml, ("NVMLError_FunctionNotFound",))
        self._mismatch = _classes(self._nvml, ("NVMLLibraryMismatchError",))
        self._memory_v2 = hasattr(self._nvml, "nvmlMemory_v2")
        self._lists = ProcessLists(self._nvml, self._call)
        self._temperature = [
            f
            for f in (
                getattr(self._nvml, "nvmlDeviceGetTemperatureV", None),
                getattr(self._nvml, "nvmlDeviceGetTemperature", None),
            )
            if f
        ]
        self._open = False

    @property
    def module(self) -> Any:
        """The NVML module this source calls (the fake one on a simulated node)."""
        return self._nvml

    def open(self) -> None:
        """Initialise NVML once; raise NvmlUnavailable with a reason and a hint when it cannot start."""
        if self._open:
            return
        try:
            self._nvml.nvmlInit()
        except self._nvml.NVMLError as exc:
            raise self._unavailable(exc) from None
        self._open = True

    def close(self) -> None:
        if self._open:
            self._open = False
            with contextlib.suppress(self._nvml.NVMLError):
                self._nvml.nvmlShutdown()

    def read(self) -> NvmlReading:
        """Every device, each on its own: one lost card never hides the others."""
        self.open()
        try:
            count = self._nvml.nvmlDeviceGetCount()
        except self._nvml.NVMLError as exc:
            raise self._unavailable(exc) from None
        reading = NvmlReading(driver_version=self._driver_version())
        for index in range(count):
            self._read_device(index, reading)
        return reading

    def _driver_version(self) -> str | None:
        try:
            return self._call(self._nvml.nvmlSystemGetDriverVersion)
        except _DeviceLost:
            return None

    def _unavailable(self, exc: BaseException) -> NvmlUnavailable:
        reason, hint = _UNAVAILABLE.get(
            type(exc).__name__,
            (f"NVML failed to start ({exc})", "check `nvidia-smi`, or try `--demo healthy-8b`"),
        )
        return NvmlUnavailable(reason, hint)

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """One NVML call: None where the reading is unsupported; _DeviceLost when the card stops answering."""
        try:
            return fn(*args, **kwargs)
        except self._missing:
            return None
        except self._lost as exc:
            raise _DeviceLost(str(exc)) from None

    def _first(self, calls: list[Any], *args: Any) -> Any:
        """The newest version of a call the driver has: a version it lacks falls through to the next."""
        for fn in calls:
            try:
                return fn(*args)
            except self._not_found + self._mismatch:
                continue
            except self._missing:
                return None
            except self._lost as exc:
                raise _DeviceLost(str(exc)) from None
        return None

    def _read_device(self, index: int, reading: NvmlReading) -> None:
        found: dict[str, Any] = {"index": index}
        try:
            handle = self._call(self._nvml.nvmlDeviceGetHandleByIndex, index)
            if handle is None:
                raise _DeviceLost("no handle for this index")
            found.update(self._identity(handle))
            found.update(self._memory(handle))
            found.update(self._activity(handle))
            mig, migs = self._mig(handle)
            found.update(mig)
            processes = self._lists.processes(handle, index, migs)
        except _DeviceLost as exc:
            message = f"GPU {index} lost: {exc}"
            reading.gpus.append(GpuRecord(**found, lost=True, error=message))
            reading.errors.append(
                SourceError(
                    source="nvml",
                    gpu_index=index,
                    message=message,
                    hint="check `nvidia-smi` and the kernel log (dmesg: Xid); the card may need a reset",
                )
            )
            return
        except self._nvml.NVMLError as exc:
            message = f"GPU {index}: {exc}"
            reading.gpus.append(GpuRecord(**found, error=message))
            reading.errors.append(SourceError(source="nvml", gpu_index=index, message=message))
            return
        reading.gpus.append(GpuRecord(**found))
        reading.processes.extend(processes)

    def _identity(self, handle: Any) -> dict[str, Any]:
        pci = self._call(self._nvml.nvmlDeviceGetPciInfo, handle)
        return {
            "name": self._call(self._nvml.nvmlDeviceGetName, handle),
            "uuid": self._call(self._nvml.nvmlDeviceGetUUID, handle),
            "bus_id": None if pci is None else pci.busId,
        }

    def _memory(self, handle: Any) -> dict[str, Any]:
        """Memory v2 where the driver has it (reserved apart from used), else v1 (reserved inside used)."""
        if self._memory_v2:
            info = self._call(self._nvml.nvmlDeviceGetMemoryInfo, handle, version=self._nvml.nvmlMemory_v2)
            if info is not None:
                return {
                    "memory_total_bytes": info.total,
                    "memory_used_bytes": info.used,
                    "memory_free_bytes": info.free,
                    "memory_reserved_bytes": info.reserved,
                }
            self._memory_v2 = False
        info = self._call(self._nvml.nvmlDeviceGetMemoryInfo, handle)
        if info is None:
            return {}
        return {
            "memory_total_bytes": info.total,
            "memory_used_bytes": info.used,
            "memory_free_bytes": info.free,
        }

    def _activity(self, handle: Any) -> dict[str, Any]:
        nvml = self._nvml
        rates = self._call(nvml.nvmlDeviceGetUtilizationRates, handle)
        power_mw = self._call(nvml.nvmlDeviceGetPowerUsage, handle)
        limit_mw = self._call(nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
        return {
            "utilization_gpu_percent": None if rates is None else rates.gpu,
            "utilization_memory_percent": None if rates is None else rates.memory,
            "temperature_c": self._first(self._temperature, handle, nvml.NVML_TEMPERATURE_GPU),
            "power_w": None if power_mw is None else power_mw / 1000,
            "power_limit_w": None if limit_mw is None else limit_mw / 1000,
        }

    def _mig(self, handle: Any) -> tuple[dict[str, Any], list[MigDevice]]:
        """MIG mode, and on a card in MIG mode its instances and MIG devices (processes are read per device)."""
        nvml = self._nvml
        modes = self._call(nvml.nvmlDeviceGetMigMode, handle)
        if modes is None:
            return {}, []
        if modes[0] != nvml.NVML_DEVICE_MIG_ENABLE:
            return {"mig_enabled": False}, []
        devices = self._lists.mig_devices(handle)
        return {"mig_enabled": True, "mig_instances": self._lists.mig_instances(devices)}, devices
