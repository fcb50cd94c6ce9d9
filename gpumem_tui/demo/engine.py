"""A simulated vLLM engine: loads weights, profiles, carves its KV pool once, then serves traffic.

Memory follows vLLM V1 (>= 0.9): the budget is `gpu_memory_utilization x usable memory`, the KV pool is
what the budget leaves after weights, non-torch memory and the activation peak, and CUDA graphs are
captured after the pool, outside the budget. Activation memory is released after profiling and grows
back with the batch (the caching allocator keeps its high-water mark).
"""

from __future__ import annotations

import random

from gpumem_tui.catalog import Catalog
from gpumem_tui.demo.engine_state import EnginePhase, EngineState
from gpumem_tui.demo.gpu import SimGpu
from gpumem_tui.demo.scenario import EngineSpec
from gpumem_tui.demo.traffic import Traffic
from gpumem_tui.planner.kv import layer_bytes_per_token
from gpumem_tui.planner.weights import weights_bytes_per_gpu
from gpumem_tui.units import GIB, MIB

PHASE_S = 5.0
"""Seconds each of profiling and CUDA-graph capture takes."""
FULL_BATCH_REQUESTS = 64
"""Running requests at which a step uses the whole profiled activation peak."""


class SimEngine:
    """One engine on its GPUs (one worker process per GPU)."""

    def __init__(self, spec: EngineSpec, gpus: list[SimGpu], catalog: Catalog, first_pid: int):
        model, fmt = catalog.model(spec.model), catalog.format(spec.format)
        self.spec, self.gpus, self.model_id = spec, gpus, model.id
        self.tp = len(gpus)
        self.weights_bytes = weights_bytes_per_gpu(model, fmt, self.tp)
        self.kv_bytes_per_token = model.layers * layer_bytes_per_token(model, spec.kv_cache_dtype, self.tp)
        default_non_torch = 0.35 if self.tp == 1 else 2.1
        self.non_torch_bytes = round(
            GIB * (spec.non_torch_gib if spec.non_torch_gib is not None else default_non_torch)
        )
        self.activation_peak_bytes = round(spec.activation_gib * GIB)
        self.cudagraph_bytes = round(spec.cudagraph_gib * GIB)
        self.pids = [first_pid + rank for rank in range(self.tp)]
        self.phase: EnginePhase = "waiting"
        self.error: str | None = None
        self.num_gpu_blocks: int | None = None
        self.activation_held_bytes = 0
        self.traffic = Traffic(spec.tokens_per_request, spec.request_s, spec.max_num_seqs)

    @property
    def alive(self) -> bool:
        return self.phase not in ("waiting", "failed", "crashed")

    @property
    def kv_bytes(self) -> int:
        return (self.num_gpu_blocks or 0) * self.spec.block_size * self.kv_bytes_per_token

    @property
    def pool_tokens(self) -> int:
        return (self.num_gpu_blocks or 0) * self.spec.block_size

    def tick(self, now: float, rng: random.Random) -> None:
        """Advance to second `now`: each phase sets what every worker holds on its GPU."""
        spec = self.spec
        t = self._running_for(now)
        if t is None or (self.phase == "waiting" and not self._enough_free()) or self._loading(t):
            return
        base = self.non_torch_bytes + self.weights_bytes
        if t < spec.load_s + PHASE_S:
            return self._hold("profiling", base + self.activation_peak_bytes)
        if self.num_gpu_blocks is None and not self._carve():
            return
        if t < spec.load_s + 2 * PHASE_S:
            return self._hold("capturing", base + self.kv_bytes + self.cudagraph_bytes)
        self._serve(now, rng, base + self.kv_bytes + self.cudagraph_bytes)

    def _running_for(self, now: float) -> float | None:
        """Seconds since the start; None before it, after the end, or when a GPU is lost now (which ends it)."""
        if self.phase in ("failed", "crashed") or now < self.spec.start_s:
            return None
        lost = next((gpu for gpu in self.gpus if gpu.lost), None)
        if lost is not None:
            self._end("crashed", f"GPU {lost.index} fell off the bus (NVML: GPU is lost); the worker died")
            return None
        return now - self.spec.start_s

    def _loading(self, t: float) -> bool:
        """While the weights load (`t` seconds in), they arrive in proportion to the time."""
        if t >= self.spec.load_s:
            return False
        self._hold("loading", self.non_torch_bytes + round(self.weights_bytes * t / self.spec.load_s))
        return True

    def _serve(self, now: float, rng: random.Random, fixed_bytes: int) -> None:
        self.traffic.step(now, self.pool_tokens, rng)
        share = min(1.0, self.traffic.running / FULL_BATCH_REQUESTS)
        self.activation_held_bytes = max(self.activation_held_bytes, round(self.activation_peak_bytes * share))
        self._hold("ready", fixed_bytes + self.activation_held_bytes)
        busy = min(1.0, self.traffic.running / 48)
        for gpu in self.gpus:
            gpu.utilization_percent = round(3 + 97 * busy) if self.alive else 0

    def _enough_free(self) -> bool:
        """vLLM >= 0.9 refuses to start when free memory is below its budget."""
        util = self.spec.gpu_memory_utilization
        for gpu in self.gpus:
            wanted = util * gpu.usable_bytes
            if gpu.free_bytes < wanted:
                self._end(
                    "failed",
                    (
                        f"Free memory on device ({gpu.free_bytes / GIB:.2f}/{gpu.usable_bytes / GIB:.2f} "
                        f"GiB) on startup is less than desired GPU memory utilization "
                        f"({util}, {wanted / GIB:.2f} GiB)"
                    ),
                )
                return False
        return True

    def _carve(self) -> bool:
        """The KV pool: budget less weights, non-torch and activation peak, in whole blocks; then fixed."""
        spec = self.spec
        budget = round(spec.gpu_memory_utilization * min(gpu.usable_bytes for gpu in self.gpus))
        kv_bytes = budget - self.weights_bytes - self.non_torch_bytes - self.activation_peak_bytes
        block_bytes = spec.block_size * self.kv_bytes_per_token
        blocks = max(0, kv_bytes // block_bytes)
        if blocks * spec.block_size < spec.max_model_len:
            needed = spec.max_model_len * self.kv_bytes_per_token
            self._end(
                "failed",
                (
                    f"To serve at least one request with the model's max seq len ({spec.max_model_len}), "
                    f"({needed / GIB:.2f} GiB KV cache is needed, which is larger than the available "
                    f"KV cache memory ({max(0, kv_bytes) / GIB:.2f} GiB)."
                ),
            )
            return False
        self.num_gpu_blocks = blocks
        return True

    def _hold(self, phase: EnginePhase, size_bytes: int) -> None:
        """Every worker holds `size_bytes` on its GPU, or the engine dies of an out-of-memory error."""
        short = [gpu for gpu, pid in zip(self.gpus, self.pids, strict=True) if not gpu.can_hold(pid, size_bytes)]
        if short:
            gpu = short[0]
            grow = size_bytes - gpu.held.get(self.pids[self.gpus.index(gpu)], 0)
            return self._end(
                "crashed" if self.phase == "ready" else "failed",
                (
                    f"CUDA out of memory. Tried to allocate {grow / MIB:,.0f} MiB on GPU {gpu.index} "
                    f"({max(0, gpu.free_bytes) / MIB:,.0f} MiB free)"
                ),
            )
        for gpu, pid in zip(self.gpus, self.pids, strict=True):
            gpu.hold(pid, size_bytes)
        self.phase = phase

    def stop(self, why: str) -> None:
        """A signal to one of its workers ended the engine: every worker goes, as vLLM's do."""
        self._end("crashed", why)

    def _end(self, phase: EnginePhase, error: str) -> None:
        for gpu, pid in zip(self.gpus, self.pids, strict=True):
            gpu.release(pid)
            gpu.utilization_percent = 0
        self.traffic.stop()
        self.phase, self.error = phase, error

    def state(self) -> EngineState:
        spec, serving = self.spec, self.phase == "ready"
        return EngineState(
            id=spec.id,
            engine=spec.engine,
            model=self.model_id,
            port=spec.port,
            pids=list(self.pids),
            gpus=list(spec.gpus),
            phase=self.phase,
            error=self.error,
            format=spec.format,
            planned_format=spec.planned_format,
            tensor_parallel_size=self.tp,
            gpu_memory_utilization=spec.gpu_memory_utilization,
            max_model_len=spec.max_model_len,
            max_num_seqs=spec.max_num_seqs,
            block_size=spec.block_size,
            cache_dtype=spec.kv_cache_dtype,
            weights_bytes_per_gpu=self.weights_bytes,
            num_gpu_blocks=self.num_gpu_blocks,
            kv_pool_tokens=self.pool_tokens if self.num_gpu_blocks is not None else None,
            kv_cache_bytes_per_gpu=self.kv_bytes if self.num_gpu_blocks is not None else None,
            kv_usage_fraction=round(self.traffic.usage, 4) if serving else None,
            requests_running=self.traffic.running if serving else None,
            requests_waiting=self.traffic.waiting if serving else None,
            preemptions_total=self.traffic.preemptions_total if serving else None,
        )
