"""Predict SGLang's startup: the fraction it picks, free memory around the weights, the KV pool in tokens,
the request caps, what is left for graphs and activations, and its log lines."""

from __future__ import annotations

from dataclasses import dataclass

from gpumem_tui.planner.sglang import headroom, memory
from gpumem_tui.planner.sglang.cell import Cell, attention_tp, cell, hybrid_layers, hybrid_split
from gpumem_tui.planner.sglang.defaults import chunked_prefill_default, cuda_graph_max_bs_default
from gpumem_tui.planner.sglang.fraction import Chosen, Launch, default_fraction, vlm_factor
from gpumem_tui.planner.sglang.loglines import log_lines
from gpumem_tui.planner.sglang.pool import Speculative, default_max_num_reqs, final_tokens, profiled_tokens, requests
from gpumem_tui.planner.sglang.records import SglangPrediction, SglangSettings
from gpumem_tui.planner.sglang.risks import failures_and_warnings, longest_accepted
from gpumem_tui.planner.sglang.versions import Rules, parse_version
from gpumem_tui.planner.vllm.loaded import dtype_bytes, stage_layers
from gpumem_tui.units import MIB


@dataclass(frozen=True)
class Stage:
    """One pipeline stage's first rank: free memory around its weights, its cell, its profiled count."""

    total: int
    weights: int
    avail: int
    cell: Cell
    profiled: int


def resolved_fraction(rules: Rules, settings: SglangSettings, launch: Launch) -> tuple[float, str]:
    """The fraction in force and why: given, or the release's default; times the multimodal factor."""
    given = settings.mem_fraction_static
    chosen = Chosen(given, f"--mem-fraction-static {given}") if given else default_fraction(rules, launch)
    factor, why = vlm_factor(rules, settings.model.vision, given is not None)
    return chosen.value * factor, chosen.rule + (f"; {why}" if why else "")


def _launch(rules: Rules, settings: SglangSettings, gpu_mib: int) -> Launch:
    """The launch as server_args sees it when it picks the default fraction: the chunk not yet divided by dp
    (`_handle_gpu_memory_settings` runs before `_handle_data_parallelism`)."""
    chunk = settings.chunked_prefill_size or chunked_prefill_default(rules, gpu_mib)
    if settings.chunk_stated and _dp_divides(settings) and chunk > 0:
        chunk *= settings.dp
    return Launch(
        gpu_mib=gpu_mib,
        tp=settings.tp,
        pp=settings.pp,
        dp=settings.dp,
        dp_attention=settings.enable_dp_attention,
        chunked_prefill_size=chunk,
        max_prefill_tokens=settings.max_prefill_tokens,
        cuda_graph_max_bs=settings.cuda_graph_max_bs or cuda_graph_max_bs_default(rules, gpu_mib, settings.tp),
        speculative=settings.speculative_algorithm,
        cuda=settings.gpu.vendor == "nvidia",
    )


def _dp_divides(settings: SglangSettings) -> bool:
    return settings.enable_dp_attention and settings.dp > 1


def _running_chunk(settings: SglangSettings, launch: Launch) -> int:
    """The chunk the scheduler runs with: divided by dp under DP attention ("to avoid MoE kernel issues")."""
    chunk = launch.chunked_prefill_size
    return chunk // settings.dp if _dp_divides(settings) and chunk > 0 else chunk


def _stage(settings: SglangSettings, rules: Rules, fraction: float, stage: int) -> Stage:
    spec, tp, pp = settings.model, settings.tp, settings.pp
    width = dtype_bytes(settings.dtype)
    weights = memory.weights_on_rank(spec, width, settings.quantization, tp, stage, pp)
    total = settings.measured_before_bytes or memory.free_before_weights(settings.gpu, settings.total_memory_bytes, tp)
    after = settings.measured_after_bytes
    avail = after if after is not None else total - weights
    if after is not None and settings.measured_before_bytes:
        weights = max(0, total - after)
    attn = attention_tp(tp, settings.dp, settings.enable_dp_attention)
    one = cell(spec, settings.kv_cache_dtype, rules, attn, stage_layers(spec.layers, stage, pp))
    return Stage(total, weights, avail, one, profiled_tokens(total, avail, fraction, one.bytes))


def predict(settings: SglangSettings) -> SglangPrediction:
    rules = Rules(parse_version(settings.version))
    spec, page = settings.model, settings.page_size
    gpu_mib = (settings.total_memory_bytes or settings.gpu.capacity_bytes) // MIB
    launch = _launch(rules, settings, gpu_mib)
    fraction, rule = resolved_fraction(rules, settings, launch)
    stages = [_stage(settings, rules, fraction, stage) for stage in range(settings.pp)]
    first, profiled = stages[0], min(stage.profiled for stage in stages)
    # none given: SGLang takes its derived length (model_config.py `_derive_context_length`), the rope factor
    # included (1,048,576 for Gemma 3's 131,072 x 8), else 2048 (`get_context_length`'s fallback)
    context_len = settings.context_length or longest_accepted(spec) or 2048
    spec_dec = Speculative(
        settings.speculative_algorithm,
        settings.speculative_num_steps,
        settings.speculative_eagle_topk,
        settings.speculative_num_draft_tokens,
    )
    reqs = settings.max_running_requests or default_max_num_reqs(rules, profiled, context_len)
    tokens = final_tokens(profiled, reqs, spec_dec, settings.max_total_tokens, page)
    swa = hybrid_layers(spec, rules)
    full_tokens, swa_tokens = hybrid_split(tokens, *swa) if swa and tokens > 0 else (max(0, tokens), None)
    dp_size = settings.dp if settings.enable_dp_attention else 1
    draft = settings.speculative_num_draft_tokens if spec_dec.enlarges_pool else 0
    table = requests(rules, reqs, full_tokens, context_len, settings.max_running_requests, dp_size, draft)
    kv_bytes = [_pool_bytes(stage.cell, full_tokens, swa_tokens, swa, page) for stage in stages]
    left = first.avail - kv_bytes[0] - table.table_bytes
    width = dtype_bytes(settings.dtype)
    graphs = headroom.cudagraph_bytes(first.cell.layers, settings.disable_cuda_graph)
    rows = min(launch.cuda_graph_max_bs, max(table.max_running_requests, 1))
    running = _running_chunk(settings, launch)
    chunk = running if running > 0 else settings.max_prefill_tokens
    activations = headroom.activation_bytes(spec, chunk, rows, width, settings.tp)
    prediction = SglangPrediction(
        version=settings.version,
        gpu_mib=gpu_mib,
        mem_fraction_static=fraction,
        fraction_given=settings.mem_fraction_static is not None,
        fraction_rule=rule,
        chunked_prefill_size=running,
        cuda_graph_max_bs=launch.cuda_graph_max_bs,
        page_size=page,
        context_len=context_len,
        total_bytes=first.total,
        total_measured=settings.measured_before_bytes is not None,
        weights_bytes=first.weights,
        avail_bytes=first.avail,
        avail_measured=settings.measured_after_bytes is not None,
        reserve_bytes=round(first.total * (1 - fraction)),
        rest_bytes=round(first.avail - first.total * (1 - fraction)),
        cell_bytes=first.cell.bytes,
        profiled_tokens=profiled,
        kv_cache_tokens=full_tokens,
        swa_tokens=swa_tokens,
        kv_cache_bytes=kv_bytes[0],
        kv_pool_bytes_all=sum(kv_bytes) * settings.tp,
        req_to_token_bytes=table.table_bytes,
        max_num_reqs=table.max_num_reqs,
        max_running_requests=table.max_running_requests,
        left_after_pool_bytes=left,
        workspace_bytes=headroom.WORKSPACE_BYTES,
        cudagraph_bytes=graphs,
        activation_bytes=activations,
        left_after_graphs_bytes=left - headroom.WORKSPACE_BYTES - graphs - activations,
        log_lines=[],
        failures=[],
        warnings=[],
        assumed=_assumed(settings, swa is not None),
    )
    failures, warnings = failures_and_warnings(settings, prediction)
    return prediction.model_copy(
        update={"failures": failures, "warnings": warnings, "log_lines": log_lines(settings, rules, prediction)}
    )


def _pool_bytes(one: Cell, tokens: int, swa_tokens: int | None, swa: tuple[int, int] | None, page: int) -> int:
    """The pool's buffers: size + page_size rows (slot 0 pads) of each layer; a hybrid model's SWA layers
    hold swa_tokens rows."""
    if tokens <= 0:
        return 0
    if swa is None or swa_tokens is None:
        return (tokens + page) * one.bytes
    swa_layers, full_layers = swa
    return (tokens + page) * one.per_layer * full_layers + (swa_tokens + page) * one.per_layer * swa_layers


def _assumed(settings: SglangSettings, hybrid: bool) -> list[str]:
    notes = []
    if settings.measured_before_bytes is None:
        notes.append(memory.free_before_note(settings.gpu, settings.tp))
    if settings.measured_after_bytes is None:
        notes.append(memory.weights_note(settings.model))
    if hybrid:
        notes.append(
            "pooled as hybrid SWA (full and sliding-window pools at --swa-full-tokens-ratio 0.8) because the "
            "catalog gives the model sliding-window or chunked layers: which architectures SGLang pools so "
            "was not read model by model"
        )
    notes.append(
        "what CUDA graphs and activations take after the pool is an estimate (nothing of it is measured at "
        "start): 0.5 GiB backend workspace, 0.015 GiB of graphs per layer, a prefill chunk's MLP and the "
        "largest graph batch's logits"
    )
    return notes
