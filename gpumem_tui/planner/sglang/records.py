"""Records for SGLang's startup sizing: the settings asked about and what the release will do with them."""

from __future__ import annotations

from pydantic import Field

from gpumem_tui.catalog.schema import GpuSpec, ModelSpec
from gpumem_tui.planner.records import NonNegative
from gpumem_tui.planner.sglang.versions import DEFAULT_VERSION
from gpumem_tui.records import FiniteRecord


class SglangSettings(FiniteRecord):
    """`sglang.launch_server` flags that decide memory (None: the release's default), and what a log
    measured where it is known (`measured_*`: the model then takes them in place of its predictions)."""

    model: ModelSpec
    gpu: GpuSpec
    version: str = DEFAULT_VERSION
    tp: int = Field(default=1, gt=0)
    pp: int = Field(default=1, gt=0)
    dp: int = Field(default=1, gt=0)
    enable_dp_attention: bool = False
    dtype: str = "auto"
    quantization: str | None = None
    """The weights' method as the planner sizes it (fp8, w4a16, awq, ...); None: the checkpoint's own."""
    kv_cache_dtype: str = "auto"
    mem_fraction_static: float | None = Field(default=None, gt=0, lt=1)
    context_length: int | None = Field(default=None, gt=0)
    check_length: bool = False
    """Hold context_length to the model's maximum as SGLang does while reading the config: a plan's asked
    length. Off for settings read from a log or a running engine, which passed that check already (or run
    with SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1)."""
    chunked_prefill_size: int | None = Field(default=None, ge=-1)
    """-1 turns chunked prefill off (then max_prefill_tokens is the prefill size)."""
    chunk_stated: bool = False
    """`chunked_prefill_size` is what a running engine or its log states: under DP attention already divided
    by dp (a launch flag is divided at start, after the default fraction is taken from it)."""
    max_prefill_tokens: int = Field(default=16384, gt=0)
    cuda_graph_max_bs: int | None = Field(default=None, gt=0)
    disable_cuda_graph: bool = False
    page_size: int = Field(default=1, gt=0)
    max_total_tokens: int | None = Field(default=None, gt=0)
    max_running_requests: int | None = Field(default=None, gt=0)
    speculative_algorithm: str | None = None
    speculative_num_steps: int = Field(default=5, ge=0)
    speculative_eagle_topk: int = Field(default=4, ge=0)
    speculative_num_draft_tokens: int = Field(default=8, ge=0)
    total_memory_bytes: int | None = Field(default=None, gt=0)
    """The card's capacity as nvidia-smi reports it, when known better than the catalog."""
    measured_before_bytes: int | None = Field(default=None, gt=0)
    """Free memory before the weights load (`Load weight begin. avail mem=`), as a log states it."""
    measured_after_bytes: int | None = None
    """Free memory once they are loaded (`Load weight end. ... avail mem=`), as a log states it."""


class SglangPrediction(FiniteRecord):
    """What the release will pick, hold and log on the first GPU (TP ranks are alike); tokens are the
    fewest over pipeline stages. Sizes are bytes per GPU."""

    name: str = "sglang"
    version: str
    gpu_mib: int
    """The card's capacity in MiB, as SGLang's defaults read it (nvidia-smi's total)."""
    mem_fraction_static: float
    """The fraction in force: the given or default one, times the multimodal factor where it applies."""
    fraction_given: bool
    fraction_rule: str
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    page_size: int
    context_len: int
    total_bytes: int
    """Free memory before the weights load: SGLang's `total_gpu_memory` (not the card's capacity)."""
    total_measured: bool
    weights_bytes: NonNegative
    avail_bytes: int
    """Free memory once the weights are loaded."""
    avail_measured: bool
    reserve_bytes: int
    """total x (1 - mem_fraction_static): what the pool leaves for CUDA graphs and activations."""
    rest_bytes: int
    """avail - reserve: the KV pool's bytes before rounding (negative: it does not start)."""
    cell_bytes: int
    profiled_tokens: int
    kv_cache_tokens: int
    """max_total_num_tokens as logged (full-layer tokens for hybrid SWA models)."""
    swa_tokens: int | None = None
    kv_cache_bytes: int
    """The pool's buffers on one GPU, the padding slot included (K and V together)."""
    kv_pool_bytes_all: int
    """The pool's buffers on every GPU of the launch."""
    req_to_token_bytes: NonNegative
    max_num_reqs: int
    max_running_requests: int
    left_after_pool_bytes: int
    """Free memory at `Memory pool end`: reserve less the request table (and the pool's rounding)."""
    workspace_bytes: NonNegative
    cudagraph_bytes: NonNegative
    activation_bytes: NonNegative
    left_after_graphs_bytes: int
    log_lines: list[str]
    failures: list[str]
    warnings: list[str]
    assumed: list[str] = []

    @property
    def need_after_pool_bytes(self) -> int:
        return self.workspace_bytes + self.cudagraph_bytes + self.activation_bytes

    def engine_json(self) -> dict:
        """The documented `engine` object of `plan --engine sglang --json`."""
        return self.model_dump()
