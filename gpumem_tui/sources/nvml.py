"""NVML source: per-GPU memory, utilization, temperature, power, MIG and processes, via nvidia-ml-py.

The NVML module is handed in: the installed `pynvml` on a live node, or a private copy of that same
binding loaded over another C library (`bind`: the simulated node's fake driver), so tests and the demo
run the binding's own code as well as this one. This is the only module importing pynvml, and only for a
live node: a simulated one runs its private copy alone (the binding's module is large: about 15 ms each).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import itertools
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

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
# Errors that mean "this reading does not exist here": the field becomes None, quietly.
_MISSING = (
    "NVMLError_NotSupported",
    "NVMLError_FunctionNotFound",
    "NVMLError_NotFound",
    "NVMLError_NoPermission",
    "NVMLError_ArgumentVersionMismatch",
)
# A version of a call this driver does not have: its symbol (FunctionNotFound), or the struct version the
# binding passes (ArgumentVersionMismatch). A fact of the driver, the same for every GPU and the whole run.
_ABSENT = ("NVMLError_FunctionNotFound", "NVMLError_ArgumentVersionMismatch", "NVMLLibraryMismatchError")
# Errors that mean the device itself stopped answering. Any other NVML error (Timeout, Insufficient Size,
# No Data, Insufficient Memory, Unknown: "any unexpected error") fails that one reading, said in a SourceError.
_LOST = ("NVMLError_GpuIsLost", "NVMLError_ResetRequired")
# What the binding itself raises on an answer it cannot take in: strict UTF-8 decoding of a string (a
# UnicodeDecodeError is a ValueError), a value ctypes refuses.
_BINDING_FAULTS = (ValueError, TypeError, OverflowError, ctypes.ArgumentError)


class NvmlUnavailable(RuntimeError):
    """NVML cannot be used on this node at all: a plain reason and what to try."""

    def __init__(self, reason: str, hint: str):
        super().__init__(f"NVML unavailable: {reason}; {hint}")
        self.reason, self.hint = reason, hint


class _DeviceLost(Exception):
    """Raised inside one device's read to abandon it; carries the driver's words."""


class _Denied(Exception):
    """NVML counts this GPU but refuses this process its handle (No Permission): a cgroup or a container's
    device list (Slurm ConstrainDevices, `docker --gpus`) lets it open only some of the node's GPUs."""


class _Absent(Exception):
    """This version of a call does not exist in this driver (raised only where the caller asked to know)."""


@dataclass
class NvmlReading:
    """One pass over every device: GPU records, their processes (GPU fields only), and what went wrong."""

    driver_version: str | None = None
    gpus: list[GpuRecord] = field(default_factory=list)
    processes: list[ProcessRecord] = field(default_factory=list)
    errors: list[SourceError] = field(default_factory=list)


_copies = itertools.count()
_COPY = "_gpumem_pynvml_"
_spare: list[ModuleType] = []
"""Copies handed back (`NvmlSource.release`): the next `bind` takes one over rather than load another."""


def bind(library: Any) -> ModuleType:
    """A private copy of the installed binding whose C library is `library` instead of
    libnvidia-ml.so.1: the binding keeps its library handle in the module attribute `nvmlLib` (and caches
    function pointers per module), so each copy serves one library and two never share a cache. A copy
    handed back is served again, its library and cache replaced: loading one costs about 5 ms of CPU."""
    try:
        module = _spare.pop()  # one step: two threads never take the same copy
    except IndexError:
        module = _copy()
    vars(module)["nvmlLib"] = library  # the binding's own global, which it reads on every call
    return module


def _unbind(module: ModuleType) -> None:
    """Hand back a copy `bind` made that nothing calls any more: as loaded, with no library, no function
    pointer cached and no `nvmlInit` counted (the binding's whole state), ready to serve another."""
    if not module.__name__.startswith(_COPY) or module in _spare:
        return  # the installed binding, or a copy already handed back
    state = vars(module)
    state["nvmlLib"] = None
    state["_nvmlGetFunctionPointer_cache"].clear()
    state["_nvmlLib_refcount"] = 0
    _spare.append(module)


def _copy() -> ModuleType:
    name = f"{_COPY}{next(_copies)}"
    installed = importlib.util.find_spec("pynvml")  # where it is, without running it
    origin = installed.origin if installed is not None else None
    spec = importlib.util.spec_from_file_location(name, origin) if origin else None
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load a copy of the NVML binding from {origin}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # the binding names its own error classes through sys.modules while it loads
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def _classes(nvml: Any, names: tuple[str, ...]) -> tuple[type[BaseException], ...]:
    return tuple(getattr(nvml, name) for name in names if hasattr(nvml, name))


class NvmlSource:
    """Reads every GPU through an NVML module; a field one card lacks is None, a lost card is marked lost."""

    def __init__(self, nvml: Any | None = None):
        if nvml is None:
            import pynvml  # the installed binding, over this node's libnvidia-ml

            nvml = pynvml
        self._nvml = nvml
        self._missing = _classes(self._nvml, _MISSING)
        self._absent = _classes(self._nvml, _ABSENT)
        self._lost = _classes(self._nvml, _LOST)
        self._denied = _classes(self._nvml, ("NVMLError_NoPermission",))
        self._memory_v2 = hasattr(self._nvml, "nvmlMemory_v2")
        """Ask memory v2 until the driver shows it has none (then never again: see `_memory`)."""
        self._lists = ProcessLists(self._nvml, self._call, self._text)
        self._temperature = [
            f
            for f in (
                getattr(self._nvml, "nvmlDeviceGetTemperatureV", None),
                getattr(self._nvml, "nvmlDeviceGetTemperature", None),
            )
            if f
        ]
        self._open = False
        self._facts: dict[int, dict[str, Any]] = {}
        """What never changes while NVML is open, per device handle: its name, UUID and bus id (`_identity`)."""
        self._driver: str | None = None
        """The driver's version, read once NVML is open."""
        self._reading = NvmlReading()
        """The reading under way: where one failed field records its SourceError."""
        self._gpu: int | None = None
        """The GPU being read, named in those errors (None for a system call)."""

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
            self._facts, self._driver = {}, None
            with contextlib.suppress(self._nvml.NVMLError):
                self._nvml.nvmlShutdown()

    def release(self) -> None:
        """Close for good, and hand a copy of the binding `bind` made back for another source to take over
        (the simulated fleet reads its nodes one after another). The source is not used again."""
        self.close()
        _unbind(self._nvml)

    def read(self) -> NvmlReading:
        """Every device, each on its own: one lost card never hides the others."""
        self.open()
        try:
            count = self._nvml.nvmlDeviceGetCount()
        except self._nvml.NVMLError as exc:
            raise self._unavailable(exc) from None
        reading = self._reading = NvmlReading()
        self._gpu = None
        reading.driver_version = self._driver_version()
        for index in range(count):
            self._gpu = index
            self._read_device(index, reading)
        self._gpu = None
        return reading

    def _driver_version(self) -> str | None:
        """Read until it is had once: the loaded driver's version is the same until NVML is closed."""
        if self._driver is None:
            try:
                self._driver = self._call(self._nvml.nvmlSystemGetDriverVersion, what="driver version")
            except _DeviceLost:
                return None
        return self._driver

    def _unavailable(self, exc: BaseException) -> NvmlUnavailable:
        reason, hint = _UNAVAILABLE.get(
            type(exc).__name__,
            (f"NVML failed to start ({exc})", "check `nvidia-smi`, or try `--demo healthy-8b`"),
        )
        return NvmlUnavailable(reason, hint)

    def _call(self, fn: Any, *args: Any, what: str | None = None, versioned: bool = False, **kwargs: Any) -> Any:
        """Every NVML call goes through here. The reading, or None: quietly where this GPU or driver does not
        have it; with one SourceError (the GPU, `what`, the driver's words) where the call failed. Raises
        _DeviceLost when the card stops answering, and _Absent for a version the driver lacks if `versioned`."""
        try:
            return fn(*args, **kwargs)
        except self._absent:
            if versioned:
                raise _Absent from None
            return None
        except self._missing:
            return None
        except self._lost as exc:
            raise _DeviceLost(str(exc)) from None
        except self._nvml.NVMLError as exc:
            self._note(what or _named(fn), str(exc))
        except _BINDING_FAULTS as exc:
            self._note(what or _named(fn), f"the driver's answer could not be read ({type(exc).__name__}: {exc})")
        return None

    def _note(self, what: str, words: str) -> None:
        where = f"GPU {self._gpu} {what}" if self._gpu is not None else what
        self._reading.errors.append(
            SourceError(
                source="nvml",
                gpu_index=self._gpu,
                message=f"{where}: {words}",
                hint="this reading is left out; the GPU's other readings and processes are shown",
            )
        )

    def _first(self, calls: list[Any], *args: Any, what: str | None = None) -> Any:
        """The newest version of a call the driver has. A version it lacks is dropped from `calls` (the
        source's own list) the first time, so later samples never look it up again: the binding caches the
        symbols it finds, not the ones it misses."""
        for fn in list(calls):
            try:
                return self._call(fn, *args, what=what, versioned=True)
            except _Absent:
                calls.remove(fn)
        return None

    def _text(self, fn: Any, handle: Any, what: str) -> str | None:
        """A string NVML copies from the card as it is (a name, a UUID). The binding decodes it as strict
        UTF-8, so bytes that are not UTF-8 would fail the field; read the bytes through the binding's own
        undecoded call (its decorator keeps it as `__wrapped__`) and show them with replacement characters."""
        raw = getattr(fn, "__wrapped__", fn)
        value = self._call(raw, handle, what=what)
        return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value

    def _read_device(self, index: int, reading: NvmlReading) -> None:
        found: dict[str, Any] = {"index": index}
        try:
            handle = self._handle(index)
            found.update(self._identity(handle))
            found.update(self._memory(handle))
            found.update(self._activity(handle))
            mig, migs = self._mig(handle)
            found.update(mig)
            processes = self._lists.processes(handle, index, migs)
        except _Denied as exc:
            reading.gpus.append(GpuRecord(index=index, accessible=False, error=f"not accessible from here: {exc}"))
            return
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

    def _handle(self, index: int) -> Any:
        try:
            return self._nvml.nvmlDeviceGetHandleByIndex(index)
        except self._denied as exc:
            raise _Denied(str(exc)) from None
        except self._lost as exc:
            raise _DeviceLost(str(exc)) from None

    def _identity(self, handle: Any) -> dict[str, Any]:
        """The card's name, UUID and bus id: read until all three are had without an error, then kept for its
        handle until NVML is closed (a handle names one card while NVML is open, and these never change on a
        card). Readings and processes are still asked every sample, and a lost card is seen by them."""
        key = _address(handle)
        if key in self._facts:
            return self._facts[key]
        errors = len(self._reading.errors)
        pci = self._call(self._nvml.nvmlDeviceGetPciInfo, handle, what="bus id")
        facts = {
            "name": self._text(self._nvml.nvmlDeviceGetName, handle, "name"),
            "uuid": self._text(self._nvml.nvmlDeviceGetUUID, handle, "UUID"),
            # the binding's struct decodes busId when it is read: strict UTF-8 again
            "bus_id": None if pci is None else self._call(getattr, pci, "busId", what="bus id"),
        }
        if key is not None and None not in facts.values() and len(self._reading.errors) == errors:
            self._facts[key] = facts
        return facts

    def _memory(self, handle: Any) -> dict[str, Any]:
        """Memory v2 where the driver has it (reserved apart from used), else v1 (reserved inside used).
        A driver without v2 (no symbol, or not this struct version) gets v1 on every GPU from then on; one GPU
        refusing v2 (Not Supported, or any failure) gets v1 for this call only, and the next GPU asks v2.
        Memory is one field, so one error: v2's failure, saying v1 was read, or v1's when that failed too."""
        errors = self._reading.errors
        v2_failed: SourceError | None = None
        before = len(errors)
        if self._memory_v2:
            try:
                info = self._call(
                    self._nvml.nvmlDeviceGetMemoryInfo,
                    handle,
                    version=self._nvml.nvmlMemory_v2,
                    what="memory (v2)",
                    versioned=True,
                )
            except _Absent:
                self._memory_v2 = False
                info = None
            if info is not None:
                return {
                    "memory_total_bytes": info.total,
                    "memory_used_bytes": info.used,
                    "memory_free_bytes": info.free,
                    "memory_reserved_bytes": info.reserved,
                }
            if len(errors) > before:  # v2 failed on this GPU (it is not absent): kept only if v1 answers
                v2_failed = errors.pop()
        info = self._call(self._nvml.nvmlDeviceGetMemoryInfo, handle, what="memory")
        if info is None:
            return {}
        if v2_failed is not None:
            errors.append(
                v2_failed.model_copy(
                    update={"hint": "read with memory v1 this sample: reserved memory is counted in used"}
                )
            )
        return {
            "memory_total_bytes": info.total,
            "memory_used_bytes": info.used,
            "memory_free_bytes": info.free,
        }

    def _activity(self, handle: Any) -> dict[str, Any]:
        nvml = self._nvml
        rates = self._call(nvml.nvmlDeviceGetUtilizationRates, handle, what="utilization")
        power_mw = self._call(nvml.nvmlDeviceGetPowerUsage, handle, what="power")
        limit_mw = self._call(nvml.nvmlDeviceGetEnforcedPowerLimit, handle, what="power limit")
        return {
            "utilization_gpu_percent": None if rates is None else rates.gpu,
            "utilization_memory_percent": None if rates is None else rates.memory,
            "temperature_c": self._first(self._temperature, handle, nvml.NVML_TEMPERATURE_GPU, what="temperature"),
            "power_w": None if power_mw is None else power_mw / 1000,
            "power_limit_w": None if limit_mw is None else limit_mw / 1000,
        }

    def _mig(self, handle: Any) -> tuple[dict[str, Any], list[MigDevice]]:
        """MIG mode, and on a card in MIG mode its instances and MIG devices (processes are read per device)."""
        nvml = self._nvml
        modes = self._call(nvml.nvmlDeviceGetMigMode, handle, what="MIG mode")
        if modes is None:
            return {}, []
        if modes[0] != nvml.NVML_DEVICE_MIG_ENABLE:
            return {"mig_enabled": False}, []
        devices = self._lists.mig_devices(handle)
        return {"mig_enabled": True, "mig_instances": self._lists.mig_instances(devices)}, devices


def _address(handle: Any) -> int | None:
    """What a device handle points at (the binding's handle is a ctypes pointer); None for anything else."""
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (ctypes.ArgumentError, TypeError):
        return None


def _named(fn: Any) -> str:
    """A call's name as the driver spells it, for an error about a call nobody named."""
    return str(getattr(fn, "__name__", fn)).removeprefix("nvmlDevice")
