"""The sampler's peak in vLLM's profile run: what is alive when the dummy sampler samples (issue 15, term 1).

Read at 0.19.0 (line numbers), the same code at 0.17.0 and 0.20.0: `profile_run` keeps the dummy run's
hidden states while `_dummy_sampler_run` samples one row per request (v1/worker/gpu_model_runner.py:
5782-5789, 5556-5632) with top-k and top-p set, so the top-k/top-p step always runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpumem_tui.catalog.schema import GpuSpec, ModelSpec
from gpumem_tui.planner.vllm.loaded import padded_vocab
from gpumem_tui.planner.vllm.versions import Rules
from gpumem_tui.units import KIB, MIB

# PyTorch's default cuBLAS workspace, taken from its caching allocator on the first matmul of the profile:
# 32 MiB on compute capability 9.x and later, ':4096:2:16:8' (8 MiB + 128 KiB) before
# (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize).
CUBLAS_WORKSPACE_HOPPER = 32 * MIB
CUBLAS_WORKSPACE_OLDER = 2 * 4096 * KIB + 8 * 16 * KIB
ASSUMED_SM_COUNT = 132
"""H100 SXM's, for a GPU whose SM count the catalog lacks (the Triton buffer is SMs x vocab x 4 bytes)."""
FP32 = 4
SORT_BYTES_PER_LOGIT = 4 + 4 + 8 + 1 + 4 + 1
"""PyTorch sort path (topk_topp_sampler.py:272-300): the fp32 logits, sorted values, int64 indices, the
top-k mask, the softmax and the top-p mask, alive together before the scatter."""
SAMPLE_BYTES_PER_LOGIT = 3 * FP32
"""Triton path: the fp32 logits, `probs` and `q` (topk_topp_sampler.py:112, 334)."""


@dataclass(frozen=True)
class SamplerParts:
    """The sampler phase's tensors, bytes per GPU."""

    logits: int
    """The LM head's output in the model dtype over the padded vocab, gathered across TP ranks."""
    fp32_work: int
    """Over the unpadded vocab: the fp32 copy (sampler.py:90) and what the top-k/top-p path adds."""
    topk_buffer: int
    """The Triton top-k/top-p kernel's per-program buffer, cached for the worker's life."""
    hidden: int
    """The dummy run's hidden states, the rows it hands the sampler and their random replacement."""
    cublas: int

    @property
    def total(self) -> int:
        return self.logits + self.fp32_work + self.topk_buffer + self.hidden + self.cublas


def topk_buffer_rows(rows: int, sm_count: int) -> int:
    """Rows of the Triton buffer: min(next power of 2 of min(SMs, rows), SMs)
    (v1/sample/ops/topk_topp_triton.py:1010-1019)."""
    programs = min(sm_count, rows)
    return min(1 << (programs - 1).bit_length(), sm_count)


def cublas_workspace_bytes(gpu: GpuSpec) -> int:
    """32 MiB from compute capability 9 on; an unknown capability (AMD, or missing) counts 32 MiB too
    (ROCm's default is 32 MiB as well, 128 MiB on gfx94x, which this does not model)."""
    if gpu.compute_capability and int(gpu.compute_capability.split(".")[0]) < 9:
        return CUBLAS_WORKSPACE_OLDER
    return CUBLAS_WORKSPACE_HOPPER


def sampler_parts(rules: Rules, spec: ModelSpec, gpu: GpuSpec, tokens: int, seqs: int, width: int) -> SamplerParts:
    """What is alive at the sampler's peak for `tokens` batched tokens spread over min(tokens, seqs)
    requests (gpu_model_runner.py:5270-5274), one logits row each.

    The model-dtype logits stay referenced by `_dummy_sampler_run` while `Sampler.forward` works on an fp32
    copy of the unpadded slice (logits_processor.py `_get_logits`, sampler.py:90). From 8 rows the Triton
    kernel masks in place with its SMs x vocab fp32 buffer (topk_topp_sampler.py:251, topk_topp_triton.py:
    1013-1019), then `probs` and `q` are made (topk_topp_sampler.py:112, 334); below 8 rows the PyTorch sort
    path runs instead (until 0.25; 0.33 always takes the Triton path, see `Rules.sampler_sort_below`)."""
    rows = min(tokens, seqs)
    vocab, hidden = spec.vocab_size, spec.hidden_size
    if rows < rules.sampler_sort_below:
        fp32_work, buffer = rows * vocab * SORT_BYTES_PER_LOGIT, 0
    else:
        fp32_work = rows * vocab * SAMPLE_BYTES_PER_LOGIT
        buffer = topk_buffer_rows(rows, gpu.sm_count or ASSUMED_SM_COUNT) * vocab * FP32
    return SamplerParts(
        logits=rows * padded_vocab(spec, 1) * width,
        fp32_work=fp32_work,
        topk_buffer=buffer,
        hidden=(tokens + 2 * rows) * hidden * width,
        cublas=cublas_workspace_bytes(gpu),
    )


def sampler_peak_bytes(rules: Rules, spec: ModelSpec, gpu: GpuSpec, tokens: int, seqs: int, width: int) -> int:
    return sampler_parts(rules, spec, gpu, tokens, seqs, width).total


def runner_note(rules: Rules, width: int) -> str | None:
    """The line that says a release after 0.20 is sized as the V1 model runner read at 0.17-0.20: 0.25.0
    makes Model Runner V2 the default for some models and 0.33.0 for all it supports
    (config/vllm.py `use_v2_model_runner`), and V2's sampler (v1/worker/gpu/sample/) was not read."""
    if not rules.sampler_from_source or width == FP32 or rules.version < (0, 21, 0):
        return None
    release = ".".join(map(str, rules.version))
    return f"sampler peak of vLLM {release} assumed as read at 0.17-0.20 (the V1 model runner, not Model Runner V2)"


def sm_count_note(rules: Rules, gpu: GpuSpec, width: int) -> str | None:
    """The line that says the Triton buffer's SM count is assumed, where the catalog lacks it."""
    if not rules.sampler_from_source or width == FP32 or gpu.sm_count:
        return None
    return f"sampler peak with {ASSUMED_SM_COUNT} SMs assumed (no SM count known for GPU {gpu.key})"
