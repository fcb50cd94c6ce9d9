"""One simulated GPU: what the card reports, and who holds how much of it (never more than it has)."""

from __future__ import annotations

from gpumem_tui.catalog.schema import GpuSpec
from gpumem_tui.units import MIB


class SimGpu:
    """A card whose memory is handed out per pid; an allocation that does not fit is refused."""

    def __init__(
        self,
        index: int,
        spec: GpuSpec,
        reserved_mib: int,
        unsupported: list[str],
        mig_instances_mib: list[int],
        seed: int,
        compute_instances: list[int] | None = None,
    ):
        self.index, self.spec = index, spec
        self.name = spec.nvml_names[0] if spec.nvml_names else spec.key
        self.uuid = f"GPU-{seed:08x}-{index:04x}-4000-8000-{index:012x}"
        self.total_bytes = spec.capacity_bytes
        self.reserved_bytes = reserved_mib * MIB
        self.unsupported = set(unsupported)
        self.mig_instances_mib = list(mig_instances_mib)
        split = compute_instances or [1] * len(mig_instances_mib)
        self.mig_devices = [(gi, ci) for gi, count in enumerate(split) for ci in range(count)]
        """(GPU instance, compute instance) of each MIG device, in NVML's MIG device index order."""
        self.lost = False
        self.held: dict[int, int] = {}
        self.utilization_percent = 0
        self.power_limit_w = spec.power_limit_w or 300.0

    @property
    def used_bytes(self) -> int:
        return sum(self.held.values())

    @property
    def free_bytes(self) -> int:
        return self.total_bytes - self.reserved_bytes - self.used_bytes

    @property
    def usable_bytes(self) -> int:
        """What a CUDA program sees as the card's total (torch `mem_get_info`): total less reserved."""
        return self.total_bytes - self.reserved_bytes

    def can_hold(self, pid: int, size_bytes: int) -> bool:
        return not self.lost and size_bytes - self.held.get(pid, 0) <= self.free_bytes

    def hold(self, pid: int, size_bytes: int) -> bool:
        """Set what `pid` holds; growth beyond the free memory is refused (the program gets an OOM)."""
        if not self.can_hold(pid, size_bytes):
            return False
        self.held[pid] = size_bytes
        return True

    def release(self, pid: int) -> None:
        self.held.pop(pid, None)

    @property
    def temperature_c(self) -> int:
        return round(30 + 0.45 * self.utilization_percent)

    @property
    def power_w(self) -> float:
        idle = 0.1 * self.power_limit_w
        return round(idle + (self.power_limit_w - idle) * 0.85 * self.utilization_percent / 100, 1)
