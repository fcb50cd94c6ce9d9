"""Predict vLLM's startup: budget, weights, profile, KV remainder, blocks, tokens and concurrency."""

from __future__ import annotations

from dataclasses import dataclass

from gpumem_tui.planner.vllm import blocks as kvblocks
from gpumem_tui.planner.vllm.loaded import dtype_bytes, loaded_weight_bytes, quantization_of, stage_layers
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
from gpumem_tui.planner.vllm.risks import failures_and_warnings
from gpumem_tui.planner.vllm.sampler import runner_note, sampler_peak_bytes, sm_count_note
from gpumem_tui.planner.vllm.versions import Rules, default_batching, rules_for
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

    def layout(self, stage: int) -> kvblocks.Layout:
        spec, pp = self.settings.model, self.settings.pp
        return kvblocks.layout(
            self.rules, spec, self.kv_width, self.settings.tp, self.block, stage_layers(spec.layers, stage, pp)
        )


def resolve(settings: EngineSettings) -> _Run:
    rules, spec = rules_for(settings.version), settings.model
    total = torch_total_bytes(settings.gpu, settings.total_memory_bytes)
    max_len = settings.max_model_len or spec.max_context or 2048
    default_tokens, default_seqs = default_batching(rules, total / GIB, settings.gpu.key, max_len)
    width = dtype_bytes(settings.dtype)
    block, block_note = kvblocks.default_block_size(rules, spec, settings.gpu, settings.kv_cache_dtype)
    if settings.block_size:
        block, block_note = settings.block_size, None
    return _Run(
        settings=settings,
        rules=rules,
        total=total,
        requested=int(total * settings.utilization),
        max_len=max_len,
        tokens=settings.max_num_batched_tokens or default_tokens,
        seqs=settings.max_num_seqs or default_seqs,
        width=width,
        kv_width=KV_WIDTH.get(settings.kv_cache_dtype.lower(), width),
        block=block,
        block_note=block_note,
        graphs=cudagraph_bytes(spec, settings.pp, settings.enforce_eager),
    )


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
        assumed=[note for note in _notes(run) if note],
        terms=dict(first.terms),
    )
    failures, warnings = failures_and_warnings(settings, run.rules, prediction, lay)
    return prediction.model_copy(
        update={"failures": failures, "warnings": warnings, "log_lines": log_lines(run.rules, prediction)}
    )


def _notes(run: _Run) -> list[str | None]:
    """The figures the source read does not decide for this GPU or release."""
    settings = run.settings
    return [
        run.block_note,
        non_torch_note(settings.gpu, settings.tp),
        sm_count_note(run.rules, settings.gpu, run.width),
        runner_note(run.rules, run.width),
        moe_workspace_note(run.rules, settings.model, settings.gpu, settings.quantization),
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
    weights = loaded_weight_bytes(spec, run.width, quantization_of(settings.quantization, spec), tp, stage, pp)
    last = stage == pp - 1
    sampler = _sampler(run) if rules.v1 and last else None
    kept = moe_workspace_bytes(rules, spec, settings.gpu, settings.quantization, run.tokens, run.width, tp)
    activation = activation_peak(rules, spec, run.tokens, run.seqs, run.width, tp, last, sampler, kept)
    terms: dict[str, int] = {}
    if sampler is not None and sampler + kept >= activation:
        terms["sampler_peak"] = sampler
        if kept:
            terms["moe_workspace"] = kept
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
