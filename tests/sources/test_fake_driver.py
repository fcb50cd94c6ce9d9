"""The fake driver answers as nvml.h says a driver does, seen through the real binding (not through the NVML
source): where it is kinder than a real driver, the source is never tested against the real behaviour."""

from __future__ import annotations

import pytest

from tests.configs import MIG_ONE_JOB


def test_a_mig_cards_own_memory_is_refused_without_the_monitor_privilege(make_rig):
    """nvml.h on nvmlDeviceGetMemoryInfo: "In MIG mode, if device handle is provided, the API returns aggregate
    information, only if the caller has appropriate privileges. Per-instance information can be queried by
    using specific MIG device handles." (NVIDIA k8s-device-plugin #1683: 'error getting parent memory info:
    Insufficient Permissions' in a container.) Each MIG device's memory is still there."""
    user = _opened(make_rig(MIG_ONE_JOB, at=5, root=False))
    card = user.nvmlDeviceGetHandleByIndex(0)
    for version in (None, user.nvmlMemory_v2):
        with pytest.raises(user.NVMLError_NoPermission):
            user.nvmlDeviceGetMemoryInfo(card, version=version)
    assert user.nvmlDeviceGetMemoryInfo(user.nvmlDeviceGetMigDeviceHandleByIndex(card, 0)).total == 40192 * 2**20
    root = _opened(make_rig(MIG_ONE_JOB, at=5))
    assert root.nvmlDeviceGetMemoryInfo(root.nvmlDeviceGetHandleByIndex(0)).total == 80 * 2**30


def _opened(rig):
    rig.binding.nvmlInit()
    return rig.binding


def test_the_legacy_bus_id_has_a_four_digit_domain(rig):
    """nvml.h: busIdLegacy is NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT ("%04X:%02X:%02X.0", 16 bytes with its NUL),
    busId NVML_DEVICE_PCI_BUS_ID_FMT ("%08X:%02X:%02X.0")."""
    nvml = _opened(rig)
    pci = nvml.nvmlDeviceGetPciInfo(nvml.nvmlDeviceGetHandleByIndex(1))
    assert (pci.busIdLegacy, pci.busId) == ("0000:26:00.0", "00000000:26:00.0")
