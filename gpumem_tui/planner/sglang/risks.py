"""What will stop an SGLang launch, and what deserves a look before it: in plain words with sizes."""

from __future__ import annotations

from gpumem_tui.catalog.schema import ModelSpec
from gpumem_tui.planner.sglang.records import SglangPrediction, SglangSettings
from gpumem_tui.planner.vllm.risks import OOM_AT_START
from gpumem_tui.units import GIB, gib

THIN_BYTES = GIB
"""Less than this left once graphs and activations are in is worth a look (the QwQ-32B run on L4 ends
graph capture with 0.53 GB free)."""
LONG_LEN_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


def longest_accepted(spec: ModelSpec) -> int | None:
    """SGLang's "derived context_length", the longest --context-length it starts with unless
    SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 (srt/configs/model_config.py `_derive_context_length`,
    srt/utils/hf_transformers_utils.py `get_context_length` at 0.5.6): max_position_embeddings times a
    RoPE scaling factor, Gemma 3's included (unlike vLLM); none for llama3 or where the scaling names its
    original_max_position_embeddings (yarn). None when the catalog does not know the maximum."""
    if not spec.max_context:
        return None
    scaling = spec.rope_scaling
    if scaling is None:
        return int(spec.max_context * spec.rope_caches[0])
    plain = scaling.type == "llama3" or scaling.original_max_position_embeddings is not None
    return spec.max_context if plain else int(spec.max_context * scaling.factor)


def failures_and_warnings(settings: SglangSettings, p: SglangPrediction) -> tuple[list[str], list[str]]:
    failures = _setting_failures(settings)
    if p.total_bytes <= 0 or p.mem_fraction_static <= 0:
        failures.append(_no_room(p))
    elif p.kv_cache_tokens <= 0:
        failures.append(not_enough(p))
    warnings: list[str] = []
    given = settings.max_total_tokens
    if given and given > p.profiled_tokens:
        warnings.append(
            f"max_total_tokens={given} is larger than the profiled value {p.profiled_tokens}: SGLang uses the "
            "profiled value"
        )
    if not failures:
        warnings += _headroom(p) + _context(p)
    return failures, warnings


def _setting_failures(settings: SglangSettings) -> list[str]:
    return _length_failures(settings) + _dp_failures(settings)


def _length_failures(settings: SglangSettings) -> list[str]:
    """A --context-length past the model's maximum: SGLang raises while reading the config."""
    derived, asked = longest_accepted(settings.model), settings.context_length
    if not (settings.check_length and asked and derived and asked > derived):
        return []
    return [
        f'SGLang refuses to start: "User-specified context_length ({asked}) is greater than the derived '
        f'context_length ({derived})"; pass --context-length {derived} or less, or set {LONG_LEN_ENV}=1 if '
        "you mean it (SGLang warns of incorrect outputs or CUDA errors past the maximum)"
    ]


def _dp_failures(settings: SglangSettings) -> list[str]:
    if not settings.enable_dp_attention:
        return []
    if settings.dp < 2:
        return ["--enable-dp-attention needs --dp above 1 (SGLang asserts dp_size > 1)"]
    if settings.tp % settings.dp:
        return [f"--tp {settings.tp} does not divide into --dp {settings.dp} (SGLang asserts tp_size % dp_size == 0)"]
    return []


def _no_room(p: SglangPrediction) -> str:
    """The card is smaller than what SGLang needs before any fraction applies."""
    if p.total_bytes <= 0:
        return (
            f"no memory is free before the weights load ({gib(p.total_bytes)}): the card is smaller than the CUDA "
            "context and communication buffers SGLang starts with"
        )
    return (
        f"mem_fraction_static comes out at {p.mem_fraction_static:.3f} ({p.fraction_rule}): the card is smaller "
        "than the memory SGLang reserves outside the fraction"
    )


def smallest_fraction(p: SglangPrediction) -> float | None:
    """The least mem_fraction_static that leaves one page of pool, or None when the weights alone exceed
    the free memory (no fraction helps)."""
    need = p.cell_bytes * p.page_size
    value = 1 - (p.avail_bytes - need) / p.total_bytes
    return value if value < 1 else None


def not_enough(p: SglangPrediction) -> str:
    """SGLang's RuntimeError, with the sums that lead to it and what would start."""
    fraction = p.mem_fraction_static
    sums = (
        f"rest = avail {gib(p.avail_bytes)} - total {gib(p.total_bytes)} x {1 - fraction:.3f} = "
        f"{gib(p.rest_bytes)}, less than one page of {p.cell_bytes * p.page_size:,} bytes"
    )
    least = smallest_fraction(p)
    fix = (
        f"raise --mem-fraction-static to at least {least:.3f} or add GPUs"
        if least is not None
        else "the weights alone exceed the free memory: add GPUs or quantize"
    )
    return (
        f"Not enough memory: the weights ({gib(p.weights_bytes)} per GPU) leave no KV pool inside "
        f"mem_fraction_static {fraction:.3f} ({sums}); {fix}"
    )


def _headroom(p: SglangPrediction) -> list[str]:
    """CUDA graphs, the backend's workspace and activations all run after the pool is carved."""
    need, left = p.need_after_pool_bytes, p.left_after_pool_bytes
    parts = (
        f"the backend workspace (~{gib(p.workspace_bytes)}), CUDA graphs (~{gib(p.cudagraph_bytes)}, batches "
        f"to {p.cuda_graph_max_bs}) and activations (~{gib(p.activation_bytes)}, chunked prefill "
        f"{p.chunked_prefill_size:,})"
    )
    if need > left:
        return [
            f"{parts} need about {gib(need)} after the KV pool, but {gib(max(left, 0))} is left ((1 - "
            f"{p.mem_fraction_static:.3f}) x {gib(p.total_bytes)} less the request table, "
            f'{gib(p.req_to_token_bytes)}): {OOM_AT_START} ("Capture cuda graph failed: CUDA out of memory"); '
            "lower --mem-fraction-static, --cuda-graph-max-bs or --chunked-prefill-size"
        ]
    if left - need < THIN_BYTES:
        return [f"{parts} leave about {gib(left - need)} free: a larger batch or longer prefill may run out"]
    return []


def _context(p: SglangPrediction) -> list[str]:
    if p.context_len <= p.kv_cache_tokens:
        return []
    return [
        f"context_len {p.context_len:,} is longer than the pool ({p.kv_cache_tokens:,} tokens): SGLang caps "
        f"a request at {p.kv_cache_tokens - 1:,} tokens"
    ]
