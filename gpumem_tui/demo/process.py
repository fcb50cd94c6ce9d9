"""A simulated non-engine process: ramps up to a fixed allocation on its GPUs, dies if it cannot get it."""

from __future__ import annotations

from gpumem_tui.demo.gpu import SimGpu
from gpumem_tui.demo.scenario import ProcessSpec
from gpumem_tui.units import GIB


class SimProcess:
    """One process (pid) holding the same amount on each of its GPUs."""

    def __init__(self, spec: ProcessSpec, gpus: list[SimGpu], pid: int):
        self.spec, self.gpus, self.pid = spec, gpus, pid
        self.alive = False
        self.error: str | None = None
        self.held_bytes = 0

    def tick(self, now: float) -> None:
        spec = self.spec
        if self.error is not None or now < spec.start_s:
            return
        if (spec.stop_s is not None and now >= spec.stop_s) or any(gpu.lost for gpu in self.gpus):
            return self._exit(None if not any(gpu.lost for gpu in self.gpus) else "GPU lost")
        share = 1.0 if spec.ramp_s <= 0 else min(1.0, (now - spec.start_s) / spec.ramp_s)
        wanted = round(spec.memory_gib * GIB * share)
        if not all(gpu.can_hold(self.pid, wanted) for gpu in self.gpus):
            return self._exit("CUDA out of memory")
        for gpu in self.gpus:
            gpu.hold(self.pid, wanted)
        self.alive, self.held_bytes = True, wanted

    def stop(self, why: str) -> None:
        """A signal ended it: its memory goes at once, and it does not come back."""
        self._exit(why)

    def _exit(self, error: str | None) -> None:
        for gpu in self.gpus:
            gpu.release(self.pid)
        self.alive, self.held_bytes = False, 0
        self.error = error or "exited"
