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
    def graphs_from_captures(self) -> bool:
        """The CUDA-graph figure built from what is captured (planner/vllm/cudagraphs.py): FULL_AND_PIECEWISE
        by default and FlashAttention 3 split buffers, as read at 0.14, 0.16, 0.17, 0.19, 0.20, 0.25, 0.33
        (config/attention.py `flash_attn_max_num_splits_for_cuda_graph = 32` in each); before, a per-layer
        figure."""
        return self.version >= (0, 14, 0)

    def largest_capture(self, cc_major: int | None) -> int:
        """The largest batch size captured by default before max_num_seqs caps it: 512; 1,024 on
        data-center Blackwell (compute capability 10) at 0.33 (config/vllm.py:2463-2465 at 0.33.0;
        0.25.0 config/vllm.py:1669-1770 still 512)."""
        return 1024 if self.version >= (0, 33, 0) and cc_major == 10 else 512

    @property
    def captures_batched_tokens(self) -> bool:
        """max_num_batched_tokens is captured as one more size when it is below the largest and off the
        stride (0.25.0 config/vllm.py:1768-1773; not at 0.20.0)."""
        return self.version >= (0, 25, 0)

    @property
    def captures_max_num_seqs(self) -> bool:
        """max_num_seqs is captured as one more size (the widest uniform decode batch) when below the
        largest (0.33.0 config/vllm.py:2549-2550, 2598-2603; not at 0.25.0)."""
        return self.version >= (0, 33, 0)

    @property
    def sampler_bytes_per_logit(self) -> int:
        """Bytes per (request x vocab) element at the sampler's peak: fp32 logits, probabilities and a
        working copy (12); before 0.17 the top-k/top-p sort added values, int64 indices and a scatter (36)."""
        return 12 if self.version >= (0, 17, 0) else 36

    @property
    def mxfp4_layout_read(self) -> bool:
        """Whether the Triton MXFP4 layout on Hopper was read for this release: every release 0.12-0.25, and
        0.33. An unread one gets the flags below by the same release bounds, so it follows the nearest read
        release (0.26-0.32 that of 0.25, before 0.12 that of 0.12)."""
        return (0, 12, 0) <= self.version < (0, 26, 0) or self.version[:2] == (0, 33)

    @property
    def mxfp4_hopper_value_align(self) -> tuple[int, int]:
        """What the Triton MXFP4 layout on Hopper pads the two packed weight dimensions (N, K/2) to: 64 and 64
        at 0.17-0.21, which pre-pad both before swizzling (third_party/triton_kernels/tensor_details/
        layout_details/hopper_value.py:128-134 at 0.19.0); before 0.17 and from 0.22 only the swizzle's mma
        packing, k_tile x warp_tile x threads x scott_trick x contig per dim: 1x2x4x2x1 = 16 on N and
        4x2x4x1x1 = 32 on K/2 (hopper_value.py:137-143 at 0.16.0, 0.22.0 and 0.25.0)."""
        return (64, 64) if (0, 17, 0) <= self.version < (0, 22, 0) else (16, 32)

    @property
    def mxfp4_keeps_original_scales(self) -> bool:
        """Whether the Triton MXFP4 path keeps the checkpoint's uint8 expert scales beside the swizzled copies:
        yes through 0.24 (quantization/mxfp4.py:296-311 at 0.19.0: the Triton backends keep them out of
        `replace_parameter`), no from 0.25, which deletes them once swizzled (fused_moe/oracle/mxfp4.py:
        1150-1155 at 0.25.0, :1466-1471 at 0.33.0; no such `del` at 0.21-0.24). The fp32 biases, the
        intermediate size rounded up to 64 and gpt-oss's fp32 RoPE cache are unchanged through 0.33
        (oracle/mxfp4.py:916, :1393-1395 and models/gpt_oss.py:111-114 at 0.33.0)."""
        return self.version < (0, 25, 0)

    @property
    def mxfp4_scale_k_groups(self) -> int:
        """What the swizzled MXFP4 scales pad their K dimension (scale groups of 32) to on Hopper: 2 (the
        layout's hopper_scale.py:30-34), 4 from 0.33 (quantization/utils/mxfp4_utils.py:134 at 0.33.0:
        'pad K (num scale groups) to 0 mod 4')."""
        return 4 if self.version >= (0, 33, 0) else 2

    @property
    def sampler_from_source(self) -> bool:
        """From 0.17 the sampler phase is sized tensor by tensor (planner/vllm/sampler.py): 0.17.0 brought the
        Triton top-k/top-p kernel (v1/sample/ops/topk_topp_triton.py; 0.16.0 has none). Read at 0.17, 0.19
        and 0.20 (the same sampler code); later releases are assumed to keep it for the V1 model runner."""
        return self.version >= (0, 17, 0)

    @property
    def forward_from_source(self) -> bool:
        """From 0.17 the compiled forward pass counts the cuBLAS workspace and Inductor's autotuning buffer
        (planner/vllm/forward.py): read at 0.19.0, which ships torch 2.10 as 0.17 does; 0.20-0.25 ship torch
        2.11 and 0.33 torch 2.14, taken to keep the benchmarker read on torch's main branch. Before 0.17
        (torch 2.9) not read: today's estimate."""
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
    def chunked_groups(self) -> bool:
        """Chunked local attention layers get their own KV groups from 0.14, where
        VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to "1" (envs.py; "0" at 0.12-0.13,
        where they join the full-attention group). Releases before 0.12 were not read (see
        `chunked_groups_read`)."""
        return self.version >= (0, 14, 0)

    @property
    def chunked_groups_read(self) -> bool:
        return self.version >= (0, 12, 0)

    def in_flight_batches(self, pp: int) -> int:
        """Batches a request's sliding-window or chunked pages are kept for: from 0.33 max_in_flight_tokens
        is the batch times max_concurrent_batches, 2 with async scheduling (on by default) on one stage and
        the stage count with PP on the V1 runner (config/vllm.py:588-609 at 0.33.0; the V2 runner keeps one
        more with PP); one batch through 0.25 (v1/kv_cache_interface.py). 0.26-0.32 were not read."""
        if self.version < (0, 33, 0):
            return 1
        return 2 if pp == 1 else pp

    @property
    def in_flight_read(self) -> bool:
        return not (0, 26, 0) <= self.version < (0, 33, 0)

    @property
    def token_rule(self) -> str:
        if not self.v1:
            return "v0"
        if self.version < (0, 9, 0):
            return "blocks"
        return "groups" if self.version < (0, 20, 0) else "concurrency"

    @property
    def skips_unused_towers(self) -> bool:
        """From 0.15 a tower whose modalities are all limited to 0 is not built (models/interfaces.py
        `_mark_tower_model`); 0.12-0.14 build Gemma 3's tower regardless (gemma3_mm.py:525 at 0.14.0)."""
        return self.version >= (0, 15, 0)

    @property
    def kv_cache_memory_flag(self) -> bool:
        return self.version >= (0, 10, 2)

    @property
    def serve_command(self) -> bool:
        """`vllm serve MODEL` from 0.5.2 (vllm-project/vllm#5090, released with 0.5.2: #6431); before, the
        server is `python -m vllm.entrypoints.openai.api_server --model MODEL`."""
        return self.version >= (0, 5, 2)

    @property
    def mm_limits_spelling(self) -> str | None:
        """How `--limit-mm-per-prompt` is written: `json` (`{"image": 0}`) from 0.9 (0.10.0 refuses the older
        form, vllm-project/vllm#21615), `pairs` (`image=0,video=0`: engine/arg_utils.py `nullable_kvs` at
        0.7) from 0.6; None before, taken to have no such flag."""
        if self.version >= (0, 9, 0):
            return "json"
        return "pairs" if self.version >= (0, 6, 0) else None


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
