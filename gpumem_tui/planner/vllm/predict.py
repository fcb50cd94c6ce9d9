"""Predict vLLM's startup: budget, weights, profile, KV remainder, blocks, tokens and concurrency."""

from __future__ import annotations

from dataclasses import dataclass

from gpumem_tui.planner.vllm import blocks as kvblocks
from gpumem_tui.planner.vllm import cudagraphs, mxfp4
from gpumem_tui.planner.vllm.forward import forward_peak_bytes, l2_note
from gpumem_tui.planner.vllm.lengths import longest_accepted
from gpumem_tui.planner.vllm.loaded import (
    dtype_bytes,
    loaded_weight_bytes,
    quantization_of,
    stage_layers,
    stage_moe_layers,
)
from gpumem_tui.planner.vllm.loglines import log_lines
from gpumem_tui.planner.vllm.moe_workspace import moe_workspace_bytes, moe_workspace_note
from gpumem_tui.planner.vllm.profile import (
    activation_peak,
    cudagraph_bytes,
    non_torch_bytes,
    non_torch_note,
    sampler_bytes,
    torch_total_bytes,
)
from gpumem_tui.planner.vllm.records import EnginePrediction, EngineSettings, RankPrediction
from gpumem_tui.planner.vllm.risks import failures_and_warnings, largest_set_pool
from gpumem_tui.planner.vllm.sampler import runner_note, sampler_peak_bytes, sm_count_note
from gpumem_tui.planner.vllm.versions import Rules, default_batching, rules_for
from gpumem_tui.planner.vllm.vision import vision_notes, vision_terms
from gpumem_tui.units import GIB

KV_WIDTH = {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "int8": 1}


@dataclass(frozen=True)
class _Run:
    """The settings as this release resolves them: defaults filled in, widths and budget worked out."""

    settings: EngineSettings
    rules: Rules
    total: int
    requested: int
    max_len: int
    tokens: int
    seqs: int
    width: int
    kv_width: int
    block: int
    block_note: str | None
    graphs: int
    mxfp4_note: str | None
    graph_terms: dict[str, int]
    graph_note: str | None

    def layout(self, stage: int) -> kvblocks.Layout:
        spec, pp = self.settings.model, self.settings.pp
        return kvblocks.layout(
            self.rules, spec, self.kv_width, self.settings.tp, self.block, stage_layers(spec.layers, stage, pp), pp
        )


def resolve(settings: EngineSettings) -> _Run:
    rules, spec = rules_for(settings.version), settings.model
    total = torch_total_bytes(settings.gpu, settings.total_memory_bytes)
    max_len = settings.max_model_len or longest_accepted(spec) or 2048
    default_tokens, default_seqs = default_batching(rules, total / GIB, settings.gpu.key, max_len)
    width = dtype_bytes(settings.dtype)
    block, block_note = kvblocks.default_block_size(rules, spec, settings.gpu, settings.kv_cache_dtype)
    if settings.block_size:
        block, block_note = settings.block_size, None
    quantization = quantization_of(settings.quantization, spec)
    _, mxfp4_note = (
        mxfp4.layout_padding(rules, spec, settings.gpu, settings.tp, spec.moe_layer_count())
        if quantization == mxfp4.QUANTIZATION
        else (0, None)
    )
    tokens = settings.max_num_batched_tokens or default_tokens
    seqs = settings.max_num_seqs or default_seqs
    graphs, graph_terms, graph_note = _graphs(settings, rules, tokens, seqs, width)
    return _Run(
        settings=settings,
        rules=rules,
        total=total,
        requested=int(total * settings.utilization),
        max_len=max_len,
        tokens=tokens,
        seqs=seqs,
        width=width,
        kv_width=KV_WIDTH.get(settings.kv_cache_dtype.lower(), width),
        block=block,
        block_note=block_note,
        graphs=graphs,
        graph_terms=graph_terms,
        graph_note=graph_note,
        mxfp4_note=mxfp4_note,
    )


def _graphs(settings: EngineSettings, rules: Rules, tokens: int, seqs: int, width: int) -> tuple[int, dict, str | None]:
    """The CUDA-graph estimate for the first rank (the one whose log line shows it), the split-buffer term
    inside it, and the note when its per-graph figures are assumed; none with --enforce-eager."""
    spec, gpu = settings.model, settings.gpu
    if settings.enforce_eager:
        return 0, {}, None
    if not (rules.v1 and rules.graphs_from_captures):
        return cudagraph_bytes(spec, settings.pp, False), {}, None
    layers = stage_layers(spec.layers, 0, settings.pp)
    graphs = cudagraphs.estimate_bytes(rules, spec, gpu, seqs, tokens, width, settings.tp, layers)
    decode = cudagraphs.full_sizes(cudagraphs.capture_sizes(rules, spec, gpu, seqs, tokens), seqs)
    split = (
        cudagraphs.split_buffers(spec, gpu, decode[-1], settings.tp) if decode and cudagraphs.full_graphs(spec) else 0
    )
    return graphs, ({"graph_split_buffers": split} if split else {}), cudagraphs.assumed_note(gpu)


def predict(settings: EngineSettings) -> EnginePrediction:
    """Every rank's budget; the first rank's memory figures (what a log shows), the fewest blocks."""
    run = resolve(settings)
    ranks = [_rank(run, stage) for stage in range(settings.pp)]
    binding = min(ranks, key=lambda rank: rank.num_gpu_blocks)
    lay = run.layout(binding.stage)
    kv_tokens, concurrency = kvblocks.tokens_and_concurrency(
        run.rules, settings.model, lay, binding.num_gpu_blocks, run.max_len, run.tokens
    )
    first = ranks[0]
    prediction = EnginePrediction(
        version=settings.version,
        total_gpu_memory_bytes=run.total,
        requested_memory_bytes=run.requested,
        weights_bytes=first.weights_bytes,
        non_torch_bytes=first.non_torch_bytes,
        activation_peak_bytes=first.activation_peak_bytes,
        cudagraph_bytes=run.graphs,
        cudagraph_charged=run.rules.charges_cudagraphs and not settings.enforce_eager,
        kv_cache_bytes=first.kv_cache_bytes,
        num_gpu_blocks=binding.num_gpu_blocks,
        block_size=run.block,
        kv_cache_tokens=kv_tokens,
        max_concurrency=concurrency,
        max_model_len=run.max_len,
        max_num_seqs=run.seqs,
        max_num_batched_tokens=run.tokens,
        ranks=ranks,
        log_lines=[],
        failures=[],
        warnings=[],
        assumed=[note for note in _notes(run) if note]
        + vision_notes(settings.model, run.rules, settings.tp, settings.limit_mm_per_prompt),
        terms={**first.terms, **run.graph_terms},
    )
    failures, warnings = failures_and_warnings(settings, run.rules, prediction, lay)
    return prediction.model_copy(
        update={
            "failures": failures,
            "warnings": warnings,
            "log_lines": log_lines(run.rules, prediction),
            "kv_cache_memory_most_bytes": largest_set_pool(settings, run.rules, prediction),
        }
    )


def _notes(run: _Run) -> list[str | None]:
    """The figures the source read does not decide for this GPU or release."""
    settings = run.settings
    return [
        run.block_note,
        run.mxfp4_note,
        kvblocks.chunked_note(run.rules, settings.model),
        kvblocks.in_flight_note(run.rules, settings.model),
        non_torch_note(settings.gpu, settings.tp),
        run.graph_note,
        sm_count_note(run.rules, settings.gpu, run.width),
        runner_note(run.rules, run.width),
        moe_workspace_note(run.rules, settings.model, settings.gpu, settings.quantization),
        l2_note(run.rules, settings.gpu, not settings.enforce_eager),
    ]


def _sampler(run: _Run) -> int:
    """The sampler phase: sized tensor by tensor from 0.17 in 16-bit, today's estimate otherwise."""
    settings, rules = run.settings, run.rules
    if rules.sampler_from_source and run.width < 4:
        return sampler_peak_bytes(rules, settings.model, settings.gpu, run.tokens, run.seqs, run.width)
    return sampler_bytes(rules, settings.model, run.tokens, run.seqs, run.width)


def _rank(run: _Run, stage: int) -> RankPrediction:
    """One pipeline stage: its weights and profile, and the KV budget they leave."""
    settings, rules = run.settings, run.rules
    spec, tp, pp = settings.model, settings.tp, settings.pp
    quantization = quantization_of(settings.quantization, spec)
    weights = loaded_weight_bytes(spec, run.width, quantization, tp, stage, pp)
    last = stage == pp - 1
    sampler = _sampler(run) if rules.v1 and last else None
    kept = moe_workspace_bytes(rules, spec, settings.gpu, settings.quantization, run.tokens, run.width, tp)
    forward = forward_peak_bytes(rules, spec, settings.gpu, run.tokens, run.width, tp, not settings.enforce_eager)
    activation = activation_peak(rules, spec, run.tokens, run.seqs, run.width, tp, last, sampler, kept, forward)
    terms: dict[str, int] = {}
    if quantization == mxfp4.QUANTIZATION:
        padding, _ = mxfp4.layout_padding(rules, spec, settings.gpu, tp, stage_moe_layers(spec, stage, pp))
        if padding:
            terms["mxfp4_layout"] = padding
            weights += padding
    if sampler is not None and sampler + kept >= activation:
        terms["sampler_peak"] = sampler
        if kept:
            terms["moe_workspace"] = kept
    elif rules.forward_from_source and not settings.enforce_eager:
        terms["forward_peak"] = forward
    terms.update(vision_terms(spec, run.tokens, run.width, tp, settings.limit_mm_per_prompt, rules))
    weights += terms.get("vision_tower", 0)
    activation += terms.get("encoder_profile", 0)
    non_torch = non_torch_bytes(rules, tp, pp, settings.gpu.interconnect)
    others = settings.other_processes_bytes if rules.charges_other_processes else 0
    graphs = run.graphs if rules.charges_cudagraphs else 0
    if settings.kv_cache_memory_bytes and rules.kv_cache_memory_flag:
        kv = settings.kv_cache_memory_bytes
    else:
        kv = run.requested - weights - activation - non_torch - graphs - others
    return RankPrediction(
        stage=stage,
        weights_bytes=weights,
        activation_peak_bytes=activation,
        non_torch_bytes=non_torch,
        kv_cache_bytes=kv,
        num_gpu_blocks=kvblocks.num_blocks(kv, run.layout(stage)),
        terms=terms,
    )
