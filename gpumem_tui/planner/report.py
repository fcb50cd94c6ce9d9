"""A plan in words (the verdict, the cross-check) and as the documented JSON object."""

from __future__ import annotations

import math

from gpumem_tui.planner.budget import make_plan
from gpumem_tui.planner.parallel import SPLITS
from gpumem_tui.planner.records import Plan, PlanInput
from gpumem_tui.planner.serving import (
    ENGINE_NAMES,
    EngineAnswer,
    EngineOptions,
    Serving,
    accepted_length,
    engine_answer,
    past_maximum,
)
from gpumem_tui.planner.sglang.records import SglangPrediction, SglangSettings
from gpumem_tui.planner.vllm.launch import LaunchLine, ServedModel, launch_line
from gpumem_tui.planner.vllm.risks import typed_size
from gpumem_tui.planner.warnings import room
from gpumem_tui.units import fmt, gib


def verdict(plan: Plan) -> str:
    """The plain method's answer in one or two sentences a person can act on."""
    inp, where = plan.input, f"{plan.gpus} x {plan.input.gpu.key}"
    if plan.split_problem:
        head = f"Cannot split over {plan.gpus} GPUs: {plan.split_problem}."
    elif plan.fits:
        head = (
            f"Fits on {where} with {room(plan.spare_bytes)} spare, {plan.spare_fraction:.1%} of the usable "
            f"{fmt(plan.per_gpu.usable_bytes * plan.gpus)}."
        )
        refused = past_maximum("vllm", inp.model, inp.context)
        if refused:
            head = f"{head[:-1].replace('Fits', 'Fits in memory', 1)}, but {refused}."
    elif plan.kv_pool_bytes < 0:
        head = f"Does not start on {where}: the weights and overhead alone exceed the budget."
    else:
        head = f"Does not fit on {where}: short by {room(plan.spare_bytes)}."
    more = ""
    if not plan.split_problem and plan.kv_pool_bytes > 0:
        more = _more(plan.max_users_at_context, plan.max_context_at_users, inp.users, inp.context)
    return head + _fewest(plan.fewest_gpus) + more


def _fewest(fewest: int | None) -> str:
    return f" Fewest GPUs that fit: {fewest}." if fewest else " Not even 8 of these GPUs fit this load."


def _more(users_at_context: int, longest: int | None, users: int, context: int) -> str:
    return f" These GPUs hold {users_at_context:,} conversation(s) of {context:,} tokens" + (
        f", or {users:,} of up to {longest:,} tokens." if longest else "."
    )


def engine_label(name: str, version: str) -> str:
    """`vLLM 0.19.0`, `SGLang 0.5.6`: the engine and release a verdict is by."""
    return f"{ENGINE_NAMES.get(name, name)} {version}"


def engine_launch(e: EngineAnswer, model: ServedModel | None = None) -> LaunchLine:
    """The command that launches the engine's plan, in its own engine's form, with the model argument's note."""
    name = model.name if model else None
    if isinstance(e.settings, SglangSettings):
        from gpumem_tui.planner.sglang.launch import launch_line as sglang_launch

        p = e.prediction
        default = p.mem_fraction_static if isinstance(p, SglangPrediction) and not p.fraction_given else None
        line = sglang_launch(e.settings, name, default)
    else:
        line = launch_line(e.settings, name)
    if model is None or model.note is None:
        return line
    return line.model_copy(update={"notes": [model.note, *line.notes]})


def serving_verdict(s: Serving) -> str:
    """The verdict of the method that decides: the engine's own sizing when one is named."""
    if s.engine is None:
        return verdict(s.plan)
    inp, e, p = s.plan.input, s.engine, s.engine.prediction
    where, by = f"{e.gpus} x {inp.gpu.key}", f"by {engine_label(p.name, p.version)}'s own sizing"
    pool = f"its KV pool holds {e.pool_tokens:,} tokens, {inp.users:,} x {inp.context:,} = {e.needed_tokens:,} needed"
    if s.plan.split_problem:
        head = f"Cannot split over {e.gpus} GPUs: {s.plan.split_problem}."
    elif not e.starts:
        head = f"Does not start on {where} {by}: {p.failures[0]}."
    elif e.fits:
        head = f"Fits on {where} {by}: {pool}, {s.spare_fraction:.1%} of the pool to spare."
    else:
        head = f"Does not fit on {where} {by}: {pool}."
    more = _more(e.max_users_at_context, e.max_context_at_users, inp.users, inp.context) if e.pool_tokens else ""
    if s.pool_past_card is not None:
        return _pool_past_card(s, head, by) + more
    longest = accepted_length(p.name, inp.model)
    if not e.starts and not s.fewest_gpus and longest and inp.context > longest:
        return head + " More GPUs do not change that: the maximum is the model's." + more
    return head + _fewest(s.fewest_gpus) + more


def _pool_past_card(s: Serving, head: str, by: str) -> str:
    """A --kv-cache-memory that no split has room for: the size is each GPU's, so one verdict says so with the
    largest size that starts, in place of a GPU count. With the split given, its own failure comes first."""
    past, gpu = s.pool_past_card, s.plan.input.gpu.key
    assert past is not None
    most, asked = past.most_bytes, gib(past.asked_bytes)
    if past.split_given:
        largest = f"the largest any split starts with is {gib(most)}, on {past.gpus} GPU(s)" if most > 0 else ""
        return f"{head} More GPUs do not make room for {asked}: --kv-cache-memory sets the KV cache of each GPU, " + (
            f"and {largest}." if largest else "and no split leaves room for a KV cache beside the weights."
        )
    largest = (
        f"the largest that starts is {gib(most)}, on {past.gpus} GPU(s), with room for the CUDA graphs and "
        f"sampler warm-up after it: pass --kv-cache-memory {typed_size(most)} or less"
        if most > 0
        else "no split leaves room for a KV cache beside the weights: shrink the weights"
    )
    return (
        f"Does not start on any number of {gpu} {by}: --kv-cache-memory sets the KV cache of each GPU, and "
        f"{asked} is more than one {gpu} leaves room for on any split; {largest}."
    )


def split_reason(asked: PlanInput, s: Serving, engine: EngineOptions | None = None) -> str | None:
    """Why a plan asked without a split is for more than one GPU: what the next smaller split lacks, by the
    method that decided. None when the split was given, is one GPU, or nothing fits."""
    if asked.gpus or not s.fewest_gpus or s.gpus <= 1:
        return None
    smaller = max(n for n in SPLITS if n < s.gpus)
    where, on = f"{smaller} x {asked.gpu.key}", asked.model_copy(update={"gpus": smaller})
    plan = make_plan(on)
    if plan.split_problem:
        return f"{where} cannot split the model: {plan.split_problem}: {s.gpus} x {asked.gpu.key}"
    if engine is not None:
        answer = engine_answer(on, engine, smaller)
        by = f"by {engine_label(engine.name, engine.version)}'s own sizing"
        if not answer.starts:
            return f"{where} does not start {by} ({answer.prediction.failures[0]}): {s.gpus} x {asked.gpu.key}"
        return (
            f"{where} is too small {by} (needs {answer.needed_tokens:,} tokens of KV cache, its pool holds "
            f"{answer.pool_tokens:,}): {s.gpus} x {asked.gpu.key}"
        )
    bands = {b.name: b.bytes for b in plan.per_gpu.bands}
    budget = plan.per_gpu.capacity_bytes - bands["reserved_by_utilization"]
    needs = bands["weights"] + bands["kv_cache"] + bands["overhead"]
    return (
        f"{where} is too small (needs {fmt(needs)}, has {fmt(budget)} per GPU at "
        f"{asked.utilization:.0%} utilization): {s.gpus} x {asked.gpu.key}"
    )


def cross_check(s: Serving) -> str:
    """The plain method's answer on the same split, labelled, with the difference per GPU explained."""
    plan, e = s.plan, s.engine
    assert e is not None
    bands = {b.name: b.bytes for b in plan.per_gpu.bands}
    if plan.split_problem:
        said = "cannot split"
    elif plan.fits:
        said = f"fits with {room(plan.spare_bytes)} spare"
    elif plan.kv_pool_bytes < 0:
        said = "does not start"
    else:
        said = f"does not fit, short by {room(plan.spare_bytes)}"
    fewest = f"fewest {plan.fewest_gpus}" if plan.fewest_gpus else "not even 8"
    head = f"Cross-check, plain method (weights + KV + a fixed overhead): {said} on {plan.gpus} GPU(s), {fewest}. "
    if isinstance(e.prediction, SglangPrediction):
        return head + _sglang_difference(plan, e.prediction, bands)
    inp, p = plan.input, e.prediction
    budget = math.floor(plan.per_gpu.capacity_bytes * inp.utilization)
    graphs = p.cudagraph_bytes if p.cudagraph_charged else 0
    engine_runtime = p.activation_peak_bytes + p.non_torch_bytes + graphs

    return head + (
        f"Per GPU it leaves {gib(plan.kv_pool_bytes // plan.gpus)} for KV where vLLM carves "
        f"{gib(p.kv_cache_bytes)}: budget {gib(budget, unit=False)} vs {gib(p.requested_memory_bytes)} "
        f"(vLLM takes {inp.utilization:.0%} of what CUDA reports, {gib(p.total_gpu_memory_bytes)}), "
        f"weights {gib(bands['weights'], unit=False)} vs {gib(p.weights_bytes)}, overhead {gib(bands['overhead'])} "
        f"vs activation peak {gib(p.activation_peak_bytes, unit=False)} + non-torch "
        f"{gib(p.non_torch_bytes, unit=False)}"
        + (f" + CUDA graphs {gib(graphs, unit=False)}" if graphs else "")
        + f" = {gib(engine_runtime)}."
    )


def _sglang_difference(plan: Plan, p: SglangPrediction, bands: dict[str, int]) -> str:
    """Why the plain method and SGLang differ per GPU: SGLang keeps a fraction of what is free before the
    weights load (not a share of the card), and what it leaves outside that fraction is the runtime's."""
    inp = plan.input
    budget = math.floor(plan.per_gpu.capacity_bytes * inp.utilization)
    kept = round(p.total_bytes * p.mem_fraction_static)
    return (
        f"Per GPU it leaves {gib(plan.kv_pool_bytes // plan.gpus)} for KV where SGLang carves "
        f"{gib(max(p.kv_cache_bytes, 0))}: budget {gib(budget, unit=False)} ({inp.utilization:.0%} of the card) vs "
        f"{gib(kept)} (SGLang keeps mem_fraction_static {p.mem_fraction_static:.3f} of the "
        f"{gib(p.total_bytes)} free before the weights load), weights {gib(bands['weights'], unit=False)} vs "
        f"{gib(p.weights_bytes)}, overhead {gib(bands['overhead'])} vs the {gib(p.reserve_bytes)} SGLang leaves "
        f"outside its fraction for CUDA graphs and activations."
    )


def plan_json(plan: Plan) -> dict:
    """The stable JSON schema documented in docs/plan-json.md, for the plain method."""
    inp = plan.input
    return {
        "model": inp.model.id,
        "gpu": inp.gpu.key,
        "weights_format": inp.weights_format.name,
        "kv_dtype": inp.kv_dtype,
        "context": inp.context,
        "users": inp.users,
        "utilization": inp.utilization,
        "params_total": plan.params_total,
        "params_active": plan.params_active,
        "weights_bytes": plan.weights_bytes,
        "kv_bytes_per_token": plan.kv_bytes_per_token,
        "kv_bytes": plan.kv_bytes,
        "gpus": plan.gpus,
        "per_gpu": {
            "capacity_bytes": plan.per_gpu.capacity_bytes,
            "usable_bytes": plan.per_gpu.usable_bytes,
            "overhead_bytes": next(b.bytes for b in plan.per_gpu.bands if b.name == "overhead"),
            "bands": [{"name": b.name, "bytes": b.bytes} for b in plan.per_gpu.bands],
        },
        "fits": plan.fits,
        "spare_bytes": plan.spare_bytes,
        "spare_fraction": round(plan.spare_fraction, 6),
        "fewest_gpus": plan.fewest_gpus,
        "max_users_at_context": plan.max_users_at_context,
        "max_context_at_users": plan.max_context_at_users,
        "kv_pool_bytes": plan.kv_pool_bytes,
        "split_problem": plan.split_problem,
        "verdict": verdict(plan),
        "warnings": list(plan.warnings),
    }


CROSS_CHECK_KEYS = ("fits", "fewest_gpus", "max_users_at_context", "max_context_at_users", "kv_pool_bytes", "verdict")


def serving_json(s: Serving, model: ServedModel | None = None) -> dict:
    """`plan_json` with `method` saying who decided; with an engine, its answers replace the verdict keys,
    the plain method's answers move to `cross_check`, `engine` holds the prediction and `launch` the command
    that reproduces it (`model`: the model argument, `launch.model_argument`)."""
    data = plan_json(s.plan)
    data["method"] = s.method
    if s.engine is None:
        return data
    e = s.engine
    data["cross_check"] = {
        "method": "plain",
        **{key: data[key] for key in CROSS_CHECK_KEYS},
        "difference": cross_check(s),
    }
    data.update(
        fits=s.fits,
        fewest_gpus=s.fewest_gpus,
        max_users_at_context=s.max_users_at_context,
        max_context_at_users=s.max_context_at_users,
        kv_pool_bytes=_pool_bytes(e),
        kv_pool_tokens=e.pool_tokens,
        verdict=serving_verdict(s),
        warnings=s.warnings,
    )
    data["engine"] = e.prediction.engine_json()
    data["launch"] = engine_launch(e, model).launch_json()
    return data


def _pool_bytes(e: EngineAnswer) -> int:
    """The engine's KV cache on all GPUs (negative: it does not start)."""
    p = e.prediction
    if isinstance(p, SglangPrediction):
        return p.kv_pool_bytes_all if p.kv_cache_tokens > 0 else p.rest_bytes * e.gpus
    return sum(rank.kv_cache_bytes for rank in p.ranks) * e.tp
