"""Which of vLLM's sizing rules a release follows (shared/reference/vllm_memory.md, sections a-c)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpumem_tui.planner.dtypes import PlanInputError

DEFAULT_VERSION = "0.33.0"

Version = tuple[int, int, int]


def parse_version(text: str) -> Version:
    """`0.6.4.post1`, `v0.19.0` or `0.19` as (0, 19, 0)."""
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", str(text).strip())
    if not match:
        raise PlanInputError(f"cannot read vLLM version {text!r}; write it like 0.19.1")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


@dataclass(frozen=True)
class Rules:
    """The behaviours that changed between releases, as flags and small enums."""

    version: Version

    @property
    def v1(self) -> bool:
        """The V1 engine is the default from 0.8.0; the v0 engine is gone from 0.11."""
        return self.version >= (0, 8, 0)

    @property
    def charges_other_processes(self) -> bool:
        """0.6.4 and V1 before 0.9 subtract memory held by other processes from the KV budget."""
        return self.version[:2] == (0, 6) and self.version[2] == 4 or (0, 8, 0) <= self.version < (0, 9, 0)

    @property
    def refuses_low_free_memory(self) -> bool:
        """From 0.9 the worker stops when free memory at start is below utilization x total."""
        return self.version >= (0, 9, 0)

    @property
    def charges_cudagraphs(self) -> bool:
        """From 0.20 the CUDA-graph estimate comes out of the KV budget; before, graphs use the headroom."""
        return self.version >= (0, 20, 0)

    @property
    def logs_cudagraph_estimate(self) -> bool:
        return self.version >= (0, 18, 0)

    @property
    def sampler_bytes_per_logit(self) -> int:
        """Bytes per (request x vocab) element at the sampler's peak: fp32 logits, probabilities and a
        working copy (12); before 0.17 the top-k/top-p sort added values, int64 indices and a scatter (36)."""
        return 12 if self.version >= (0, 17, 0) else 36

    @property
    def sampler_from_source(self) -> bool:
        """From 0.17 the sampler phase is sized tensor by tensor (planner/vllm/sampler.py): 0.17.0 brought the
        Triton top-k/top-p kernel (v1/sample/ops/topk_topp_triton.py; 0.16.0 has none). Read at 0.17, 0.19
        and 0.20 (the same sampler code); later releases are assumed to keep it for the V1 model runner."""
        return self.version >= (0, 17, 0)

    @property
    def sampler_sort_below(self) -> int:
        """Below this many requests the PyTorch sort path masks top-k/top-p instead of the Triton kernel
        (topk_topp_sampler.py:251 at 0.19.0, the same at 0.25.0); 0.33.0 always takes the Triton path
        (0.26 to 0.32 not read: taken as 0.33)."""
        return 8 if self.version < (0, 26, 0) else 0

    def moe_kernel(self, compute_capability: str | None) -> str | None:
        """The default kernel of 16-bit MoE layers, when it keeps its buffers in the worker's workspace
        (v1/worker/workspace.py, from 0.14; 0.13 calls `fused_experts`, whose caches are freed per layer):
        'triton' (fused_moe.py TritonExperts), or 'flashinfer' (FlashInfer CUTLASS, flashinfer_cutlass_moe.py)
        where 0.20 puts FlashInfer first: compute capability 9.0 until 0.22 (0.23 moves it behind Triton
        on 9.x) and 10.x to 12.x from 0.20 (read at 0.19-0.25 and 0.33; oracle/unquantized.py)."""
        if self.version < (0, 14, 0):
            return None
        major = int(compute_capability.split(".")[0]) if compute_capability else 0
        if self.version >= (0, 20, 0) and (major >= 10 or major == 9 and self.version < (0, 23, 0)):
            return "flashinfer"
        return "triton"

    @property
    def moe_chunk_tokens(self) -> int | None:
        """VLLM_FUSED_MOE_CHUNK_SIZE's default (16,384 tokens) splits the Triton workspace until 0.15; 0.16
        has no chunking."""
        return 16 * 1024 if self.version < (0, 16, 0) else None

    @property
    def hybrid_groups(self) -> bool:
        """V1 from 0.9 groups sliding-window and full-attention layers into one shared block pool."""
        return self.version >= (0, 9, 0)

    @property
    def token_rule(self) -> str:
        if not self.v1:
            return "v0"
        if self.version < (0, 9, 0):
            return "blocks"
        return "groups" if self.version < (0, 20, 0) else "concurrency"

    @property
    def kv_cache_memory_flag(self) -> bool:
        return self.version >= (0, 10, 2)


FIRST_KNOWN: Version = (0, 4, 0)
LAST_KNOWN: Version = (0, 33, 99)
"""The releases the rules were read from (shared/reference/vllm_memory.md: 0.4.3 to 0.33.0), any patch."""


def known_version(text: str) -> str:
    """`text` (without a leading v) when it names a release the rules know; otherwise a PlanInputError
    that says which do."""
    version = parse_version(text)
    if not FIRST_KNOWN <= version <= LAST_KNOWN:
        raise PlanInputError(
            f"vLLM {str(text).strip()} is not a release the sizing rules know; "
            f"use one from {FIRST_KNOWN[0]}.{FIRST_KNOWN[1]} to {LAST_KNOWN[0]}.{LAST_KNOWN[1]}.x"
        )
    return str(text).strip().removeprefix("v")


def rules_for(text: str) -> Rules:
    return Rules(parse_version(text))


def default_batching(rules: Rules, total_gib: float, gpu_key: str, max_model_len: int) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) for the OpenAI server when the user sets neither."""
    if not rules.v1:
        chunked = max_model_len > 32768
        return (512 if chunked else max(max_model_len, 2048)), 256
    big = total_gib >= 70 and not (rules.version >= (0, 9, 0) and gpu_key.upper().startswith("A100"))
    if rules.version >= (0, 33, 0) and total_gib >= 160:
        return 16384, 1024
    return (8192, 1024) if big else (2048, 256)
