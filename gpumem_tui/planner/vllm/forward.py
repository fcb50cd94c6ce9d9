"""The forward pass's peak in vLLM's profile run: what is alive when the dummy forward pass is widest.

Read at 0.19.0: `profile_run` calls `_dummy_run(max_num_tokens, is_profile=True)` (v1/worker/
gpu_model_runner.py:5782-5784), the first call of the model, so torch.compile compiles it there and Inductor
autotunes each generated Triton kernel on its first launch with the real inputs. The profile's peak is
`allocated_bytes.all.peak` during `profile_run` less what was allocated before it (v1/worker/gpu_worker.py:
366-386, utils/mem_utils.py:252-273), so the autotuning buffers count. Inductor keeps each kernel's best
config in its cache directory: a warm cache skips the timing and its buffer, 50 MiB less than predicted
(the calibration logs compile anew: "Compiling a graph for compile range (1, 8192) takes 4.21 s").
"""

from __future__ import annotations

from gpumem_tui.catalog.schema import GpuSpec, ModelSpec
from gpumem_tui.planner.vllm.profile import forward_bytes
from gpumem_tui.planner.vllm.sampler import cublas_workspace_bytes
from gpumem_tui.planner.vllm.versions import Rules
from gpumem_tui.units import MIB

ASSUMED_L2_BYTES = 50 * MIB
"""H100's L2, for a GPU whose L2 size the catalog lacks."""


def autotune_buffer_bytes(gpu: GpuSpec) -> int:
    """Inductor's benchmarker zeroes an L2-sized int32 buffer between timed launches to flush the cache
    (`torch.empty(self.L2_cache_size // 4, dtype=torch.int)` in InductorBenchmarker.benchmark_gpu,
    torch/_inductor/runtime/benchmarking.py, the default benchmarker: `use_experimental_benchmarker` is True
    in torch/_inductor/config.py; Triton's own do_bench would flush with about 256 MiB, which the logs do not show).
    CachingAutotuner.bench times each kernel with more than one config, Inductor's pointwise kernels among
    them; the buffer lives while the kernel is timed, on top of the kernel's arguments."""
    return gpu.l2_cache_mib * MIB if gpu.l2_cache_mib else ASSUMED_L2_BYTES


def forward_peak_bytes(
    rules: Rules, spec: ModelSpec, gpu: GpuSpec, tokens: int, width: int, tp: int, compiled: bool
) -> int:
    """The forward pass's peak: the MLP's widest moment, when the compiled piece between two attention
    layers holds its inputs (the attention output and the residual), the new residual, the gate/up output
    and the SiluAndMul output (`profile.forward_bytes`: 3 x I/tp + 3 x H per token), plus the cuBLAS
    workspace the first matmul takes from the caching allocator and, while the fused SiluAndMul kernel is
    autotuned, Inductor's flush buffer. Eager (--enforce-eager) compiles nothing and releases before 0.17
    were not read: today's estimate there."""
    plain = forward_bytes(spec, tokens, width, tp)
    if not (compiled and rules.forward_from_source):
        return plain
    return plain + cublas_workspace_bytes(gpu) + autotune_buffer_bytes(gpu)


def l2_note(rules: Rules, gpu: GpuSpec, compiled: bool) -> str | None:
    """The line that says the autotuning buffer's size is assumed, where the catalog lacks the L2 size."""
    if not (compiled and rules.forward_from_source) or gpu.l2_cache_mib:
        return None
    size = f"{ASSUMED_L2_BYTES // MIB} MiB"
    return f"forward peak with a {size} L2 flush buffer assumed (no L2 size known for GPU {gpu.key})"
