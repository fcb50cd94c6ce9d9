"""What libnvidia-ml.so.1 looks like from C: return codes, the structs it writes, the symbols each driver
release exports, and the C prototype of each symbol the fake driver serves.

Written from NVML's header (nvml.h) and the driver notes quoted by nvidia-ml-py and nvitop, not from the
Python binding: the fake driver must be able to disagree with the binding the way a real driver does
(an early R535 driver writes 32-byte process entries where the binding reads 24-byte ones).
"""

from __future__ import annotations

import ctypes
from ctypes import CFUNCTYPE, c_char, c_int, c_uint, c_ulonglong, c_void_p
from functools import cache

# nvmlReturn_t
SUCCESS = 0
ERROR_UNINITIALIZED = 1
ERROR_INVALID_ARGUMENT = 2
ERROR_NOT_SUPPORTED = 3
ERROR_NO_PERMISSION = 4
ERROR_NOT_FOUND = 6
ERROR_INSUFFICIENT_SIZE = 7
ERROR_DRIVER_NOT_LOADED = 9
ERROR_TIMEOUT = 10
ERROR_FUNCTION_NOT_FOUND = 13
ERROR_GPU_IS_LOST = 15
ERROR_RESET_REQUIRED = 16
ERROR_LIB_RM_VERSION_MISMATCH = 18
ERROR_MEMORY = 20
ERROR_NO_DATA = 21
ERROR_ARGUMENT_VERSION_MISMATCH = 25
ERROR_UNKNOWN = 999

VALUE_NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF
"""usedGpuMemory when the driver cannot say (a MIG parent handle, WDDM)."""
NO_INSTANCE = 0xFFFFFFFF
"""gpuInstanceId / computeInstanceId of a process on a card that is not in MIG mode."""
DEVICE_MIG_DISABLE, DEVICE_MIG_ENABLE = 0, 1
TEMPERATURE_GPU = 0


class ProcessInfoV1(ctypes.Structure):
    """nvmlProcessInfo_v1_t: the unversioned process calls (16 bytes)."""

    _fields_ = [("pid", c_uint), ("usedGpuMemory", c_ulonglong)]


class ProcessInfoV2(ctypes.Structure):
    """nvmlProcessInfo_v2_t (24 bytes): the `_v2` calls, and the `_v3` calls of every driver but early R535."""

    _fields_ = [
        ("pid", c_uint),
        ("usedGpuMemory", c_ulonglong),
        ("gpuInstanceId", c_uint),
        ("computeInstanceId", c_uint),
    ]


class ProcessInfoV3R535(ctypes.Structure):
    """The 32-byte entry the `_v3` calls of R535 drivers 535.43 to 535.86 write (nvitop #79)."""

    _fields_ = [*ProcessInfoV2._fields_, ("usedGpuCcProtectedMemory", c_ulonglong)]


class Memory(ctypes.Structure):
    _fields_ = [("total", c_ulonglong), ("free", c_ulonglong), ("used", c_ulonglong)]


class MemoryV2(ctypes.Structure):
    _fields_ = [
        ("version", c_uint),
        ("total", c_ulonglong),
        ("reserved", c_ulonglong),
        ("free", c_ulonglong),
        ("used", c_ulonglong),
    ]


MEMORY_V2 = ctypes.sizeof(MemoryV2) | (2 << 24)
"""NVML_STRUCT_VERSION(Memory, 2): the version a caller must put in MemoryV2.version."""


class Utilization(ctypes.Structure):
    _fields_ = [("gpu", c_uint), ("memory", c_uint)]


class TemperatureV1(ctypes.Structure):
    _fields_ = [("version", c_uint), ("sensorType", c_int), ("temperature", c_int)]


TEMPERATURE_V1 = ctypes.sizeof(TemperatureV1) | (1 << 24)


class PciInfo(ctypes.Structure):
    """nvmlPciInfo_t (v3)."""

    _fields_ = [
        ("busIdLegacy", c_char * 16),
        ("domain", c_uint),
        ("bus", c_uint),
        ("device", c_uint),
        ("pciDeviceId", c_uint),
        ("pciSubSystemId", c_uint),
        ("busId", c_char * 32),
    ]


def _proto(*args: type) -> type:
    return CFUNCTYPE(c_int, *args)


_P = c_void_p
PROTOTYPES: dict[str, type] = {
    "nvmlInitWithFlags": _proto(c_uint),
    "nvmlInit_v2": _proto(),
    "nvmlShutdown": _proto(),
    "nvmlSystemGetDriverVersion": _proto(_P, c_uint),
    "nvmlDeviceGetCount_v2": _proto(_P),
    "nvmlDeviceGetHandleByIndex_v2": _proto(c_uint, _P),
    "nvmlDeviceGetName": _proto(_P, _P, c_uint),
    "nvmlDeviceGetUUID": _proto(_P, _P, c_uint),
    "nvmlDeviceGetPciInfo_v3": _proto(_P, _P),
    "nvmlDeviceGetMemoryInfo": _proto(_P, _P),
    "nvmlDeviceGetMemoryInfo_v2": _proto(_P, _P),
    "nvmlDeviceGetUtilizationRates": _proto(_P, _P),
    "nvmlDeviceGetTemperature": _proto(_P, c_uint, _P),
    "nvmlDeviceGetTemperatureV": _proto(_P, _P),
    "nvmlDeviceGetPowerUsage": _proto(_P, _P),
    "nvmlDeviceGetEnforcedPowerLimit": _proto(_P, _P),
    "nvmlDeviceGetMigMode": _proto(_P, _P, _P),
    "nvmlDeviceGetMaxMigDeviceCount": _proto(_P, _P),
    "nvmlDeviceGetMigDeviceHandleByIndex": _proto(_P, c_uint, _P),
    "nvmlDeviceGetGpuInstanceId": _proto(_P, _P),
    "nvmlDeviceGetComputeInstanceId": _proto(_P, _P),
    "nvmlDeviceGetConfComputeMemSizeInfo": _proto(_P, _P),
    "nvmlDeviceGetRunningProcessDetailList": _proto(_P, _P),
    **{
        f"nvmlDeviceGet{kind}RunningProcesses{suffix}": _proto(_P, _P, _P)
        for kind in ("Compute", "Graphics", "MPSCompute")
        for suffix in ("", "_v2", "_v3")
    },
}

LIST_KINDS = {"Compute": "compute", "Graphics": "graphics", "MPSCompute": "mps"}
"""Process-list symbol stem -> the kind of process it lists."""


def release(version: str) -> tuple[int, ...]:
    """`535.54.03` -> (535, 54, 3): driver versions compare as numbers."""
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def exported(version: str) -> set[str]:
    """The symbols a driver release exports (of those the fake serves); the rest are FunctionNotFound."""
    at = release(version)
    names = set(PROTOTYPES)
    if at < (510,):
        names -= {"nvmlDeviceGetMemoryInfo_v2", *_process_symbols("_v3")}
    if at < (535,):
        names.discard("nvmlDeviceGetConfComputeMemSizeInfo")
    if at < (535, 104):
        names.discard("nvmlDeviceGetRunningProcessDetailList")
    if at < (565,):
        names.discard("nvmlDeviceGetTemperatureV")
    return names


@cache
def v3_entry(version: str) -> type[ctypes.Structure]:
    """The entry a release's `_v3` process calls write: 32 bytes on 535.43-535.86, else 24 (asked at each list
    call, so worked out once per version)."""
    return ProcessInfoV3R535 if (535, 43) <= release(version) < (535, 104) else ProcessInfoV2


def _process_symbols(suffix: str) -> set[str]:
    return {f"nvmlDeviceGet{kind}RunningProcesses{suffix}" for kind in LIST_KINDS}
