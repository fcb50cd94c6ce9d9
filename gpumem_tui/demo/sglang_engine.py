"""A simulated SGLang engine: loads its weights, carves its KV pool at once by SGLang's rule, captures its CUDA
graphs, then serves traffic.

The pool follows SGLang v0.3 to v0.5.6's `profile_max_num_token`: `total` is the memory free before the weights
load (after the CUDA context), `avail` what is free after them, and the pool takes
`avail - total * (1 - mem_fraction_static)` in whole tokens (docs/design/node.md, "An SGLang engine"), by the
planner's own rule (planner/sglang/pool.py) over what this simulated card has free. CUDA graphs and activations
live in what the fraction leaves; nothing is measured for them before the pool is carved.
"""

from __future__ import annotations

import random

from gpumem_tui.demo.engine import PHASE_S, SimEngine
from gpumem_tui.demo.engine_state import EngineState
from gpumem_tui.demo.gpu import SimGpu
from gpumem_tui.planner.sglang.pool import Speculative, default_max_num_reqs, final_tokens, profiled_tokens, requests
from gpumem_tui.planner.sglang.versions import Rules, parse_version

NO_SPECULATION = Speculative(None, 0, 0, 0)


class SimSglang(SimEngine):
    """One SGLang server on its GPUs (one scheduler process per GPU)."""

    pool_tokens_carved: int | None = None
    max_num_reqs: int | None = None
    """The request table's rows: --max-running-requests, else SGLang's default from the profiled pool."""
    max_running_carved: int | None = None
    """`max_running` as the carved pool fixes it, kept so a tick does not work it out again."""

    @property
    def kv_bytes(self) -> int:
        """The pool's buffers: one page more than its tokens (slot 0 pads), per GPU."""
        tokens = self.pool_tokens_carved
        return 0 if tokens is None else (tokens + self.spec.page_size) * self.kv_bytes_per_token

    @property
    def pool_tokens(self) -> int:
        return self.pool_tokens_carved or 0

    @property
    def rules(self) -> Rules:
        return Rules(parse_version(self.spec.sglang_version))

    @property
    def max_running(self) -> int:
        """`--max-running-requests`, else SGLang's own: half the pool, at most the request table's rows (fixed
        once the pool is carved)."""
        if self.max_running_carved is not None:
            return self.max_running_carved
        spec = self.spec
        reqs = self.max_num_reqs or spec.max_running_requests or 1
        given = spec.max_running_requests
        return requests(self.rules, reqs, self.pool_tokens, spec.max_model_len, given, 1).max_running_requests

    def tick(self, now: float, rng: random.Random) -> None:
        spec = self.spec
        t = self._running_for(now)
        if t is None or self._loading(t):
            return
        base = self.non_torch_bytes + self.weights_bytes
        if self.pool_tokens_carved is None and not self._carve():
            return
        if t < spec.load_s + PHASE_S:
            return self._hold("capturing", base + self.kv_bytes + self.cudagraph_bytes)
        self.traffic.max_num_seqs = self.max_running
        self._serve(now, rng, base + self.kv_bytes + self.cudagraph_bytes)

    def _carve(self) -> bool:
        """SGLang's pool: what the fraction of `total` leaves after the weights, in whole pages; never
        negative (SGLang stops: "Not enough memory")."""
        spec = self.spec
        # free after the CUDA context, before the weights (what this engine holds now set aside)
        total = min(gpu.free_bytes + gpu.held.get(pid, 0) - self.non_torch_bytes for gpu, pid in self._ranks())
        avail = total - self.weights_bytes
        profiled = profiled_tokens(total, avail, spec.mem_fraction_static, self.kv_bytes_per_token)
        reqs = spec.max_running_requests or default_max_num_reqs(self.rules, profiled, spec.max_model_len)
        tokens = final_tokens(profiled, reqs, NO_SPECULATION, spec.max_total_tokens, spec.page_size)
        if tokens <= 0:
            self._end(
                "failed",
                "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                f"Current value: mem_fraction_static={spec.mem_fraction_static}",
            )
            return False
        self.pool_tokens_carved, self.max_num_reqs = tokens, reqs
        self.max_running_carved = self.max_running
        return True

    def _ranks(self) -> list[tuple[SimGpu, int]]:
        return list(zip(self.gpus, self.pids, strict=True))

    def state(self) -> EngineState:
        state = super().state()
        carved = self.pool_tokens_carved is not None
        return state.model_copy(
            update={
                "num_gpu_blocks": None,
                "max_num_seqs": self.max_running if carved else state.max_num_seqs,
                "kv_pool_tokens": self.pool_tokens_carved,
                "kv_cache_bytes_per_gpu": self.kv_bytes if carved else None,
                "cudagraph_bytes_per_gpu": self.cudagraph_bytes,
                "sglang": self._settings() if carved else None,
            }
        )

    def _settings(self) -> dict:
        """The server arguments SGLang resolved at start, and what its scheduler reports of its pool."""
        spec = self.spec
        return {
            "version": spec.sglang_version,
            "tp_size": self.tp,
            "mem_fraction_static": spec.mem_fraction_static,
            "max_total_tokens": spec.max_total_tokens,
            "max_running_requests": self.max_running,
            "chunked_prefill_size": spec.chunked_prefill_size,
            "cuda_graph_max_bs": spec.cuda_graph_max_bs,
            "page_size": spec.page_size,
            "context_length": spec.max_model_len,
            "kv_cache_dtype": spec.kv_cache_dtype,
            "max_total_num_tokens": self.pool_tokens_carved,
            "weights_bytes": self.weights_bytes,
            "kv_cache_bytes": self.kv_bytes,
            "cuda_graph_bytes": self.cudagraph_bytes,
        }
