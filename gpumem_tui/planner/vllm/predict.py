"""Predict vLLM's startup: budget, weights, profile, KV remainder, blocks, tokens and concurrency."""

from __future__ import annotations

from gpumem_tui.planner.vllm import blocks as kvblocks
from gpumem_tui.planner.vllm.loaded import dtype_bytes, loaded_weight_bytes, quantization_of, stage_layers
from gpumem_tui.planner.vllm.loglines import log_lines
from gpumem_tui.planner.vllm.profile import (
    activation_peak,
    cudagraph_bytes,
    non_torch_bytes,
    torch_total_bytes,
)
from gpumem_tui.planner.vllm.records import EnginePrediction, EngineSettings, RankPrediction
from gpumem_tui.planner.vllm.risks import failures_and_warnings
from gpumem_tui.planner.vllm.versions import Rules, default_batching, rules_for
from gpumem_tui.units import GIB

KV_WIDTH = {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "int8": 1}


def predict(settings: EngineSettings) -> EnginePrediction:
    rules = rules_for(settings.version)
    spec = settings.model
    total = torch_total_bytes(settings.gpu, settings.total_memory_bytes)
    max_len = settings.max_model_len or spec.max_context or 2048
    default_tokens, default_seqs = default_batching(rules, total / GIB, settings.gpu.key, max_len)
    tokens = settings.max_num_batched_tokens or default_tokens
    seqs = settings.max_num_seqs or default_seqs
    width = dtype_bytes(settings.dtype, spec)
    kv_width = KV_WIDTH.get(settings.kv_cache_dtype.lower(), width)
    block = settings.block_size or (64 if spec.mla else 16)
    requested = int(total * settings.utilization)
    graphs = cudagraph_bytes(spec, settings.pp, settings.enforce_eager)
    charged_graphs = graphs if rules.charges_cudagraphs else 0
    ranks = [
        _rank(settings, rules, stage, width, kv_width, block, requested, charged_graphs, tokens, seqs)
        for stage in range(settings.pp)
    ]
    binding = min(ranks, key=lambda rank: rank.num_gpu_blocks)
    lay = kvblocks.layout(
        rules, spec, kv_width, settings.tp, block, stage_layers(spec.layers, binding.stage, settings.pp)
    )
    kv_tokens, concurrency = kvblocks.tokens_and_concurrency(rules, spec, lay, binding.num_gpu_blocks, max_len, tokens)
    prediction = EnginePrediction(
        version=settings.version,
        total_gpu_memory_bytes=total,
        requested_memory_bytes=requested,
        weights_bytes=ranks[0].weights_bytes,
        non_torch_bytes=ranks[0].non_torch_bytes,
        activation_peak_bytes=ranks[0].activation_peak_bytes,
        cudagraph_bytes=graphs,
        cudagraph_charged=rules.charges_cudagraphs and not settings.enforce_eager,
        kv_cache_bytes=ranks[0].kv_cache_bytes,
        num_gpu_blocks=binding.num_gpu_blocks,
        block_size=block,
        kv_cache_tokens=kv_tokens,
        max_concurrency=concurrency,
        max_model_len=max_len,
        max_num_seqs=seqs,
        max_num_batched_tokens=tokens,
        ranks=ranks,
        log_lines=[],
        failures=[],
        warnings=[],
    )
    failures, warnings = failures_and_warnings(settings, rules, prediction, lay)
    return prediction.model_copy(
        update={"failures": failures, "warnings": warnings, "log_lines": log_lines(rules, prediction)}
    )


def _rank(
    settings: EngineSettings,
    rules: Rules,
    stage: int,
    width: int,
    kv_width: int,
    block: int,
    requested: int,
    graphs: int,
    tokens: int,
    seqs: int,
) -> RankPrediction:
    spec, tp, pp = settings.model, settings.tp, settings.pp
    quant = quantization_of(settings.quantization, spec)
    weights = loaded_weight_bytes(spec, width, quant, tp, stage, pp)
    activation = activation_peak(rules, spec, tokens, seqs, width, tp, last_stage=stage == pp - 1)
    non_torch = non_torch_bytes(rules, tp, pp)
    others = settings.other_processes_bytes if rules.charges_other_processes else 0
    if settings.kv_cache_memory_bytes and rules.kv_cache_memory_flag:
        kv = settings.kv_cache_memory_bytes
    else:
        kv = requested - weights - activation - non_torch - graphs - others
    lay = kvblocks.layout(rules, spec, kv_width, tp, block, stage_layers(spec.layers, stage, pp))
    return RankPrediction(
        stage=stage,
        weights_bytes=weights,
        activation_peak_bytes=activation,
        non_torch_bytes=non_torch,
        kv_cache_bytes=kv,
        num_gpu_blocks=kvblocks.num_blocks(kv, lay),
    )
