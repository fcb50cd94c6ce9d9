"""`gpumem-tui plan`: will this model fit on these GPUs for this load, and with how much to spare. The options
are plan_opts.py's; the text, plan_view.py's."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.engine_opts import engine_version
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.cli.output import print_json, reader_may_leave
from gpumem_tui.cli.plan_resolve import Resolved, plan_input
from gpumem_tui.cli.planargs import fields
from gpumem_tui.planner.report import serving_json, split_reason
from gpumem_tui.planner.serving import SGLANG_FLAGS, VLLM_FLAGS, EngineOptions, serve
from gpumem_tui.planner.vllm.launch import model_argument
from gpumem_tui.planner.vllm.vision import NO_MODALITIES
from gpumem_tui.units import fmt_both

ENGINE_FIELDS = ("pp", "dtype", *(name for name in (*VLLM_FLAGS, *SGLANG_FLAGS) if name != "limit_mm_per_prompt"))
"""The engine options whose dests are the EngineOptions fields they fill (--limit-mm-per-prompt is read apart:
--language-model-only sets it too)."""


def run(args: argparse.Namespace) -> int:
    found = Resolved(args)
    inp = plan_input(args, found)
    if not args.engine:
        _no_engine_flags(args)
    engine = engine_options(args, found) if args.engine else None
    serving = serve(inp, engine)
    if args.gpus and serving.plan.split_problem:
        raise UsageError(f"--gpus {args.gpus}: {serving.plan.split_problem}")
    why = split_reason(inp, serving, engine)
    extra = found.warnings + (
        [f"weights from safetensors headers: {fmt_both(found.checkpoint.total_bytes)}"]
        if found.checkpoint and not args.weights
        else []
    )
    model = model_argument(found.model, args.model, args.config)
    with reader_may_leave():
        if args.json:
            data = serving_json(serving, model)
            data["warnings"] = extra + data["warnings"]
            data["split_reason"] = why
            print_json(data)
        else:
            from gpumem_tui.cli.plan_view import print_engine_plan, print_plan  # rich: for the text only

            if serving.engine:
                print_engine_plan(serving, extra, why, model)
            else:
                print_plan(serving.plan, extra, why)
    return 1 if args.check and not serving.passes else 0


def engine_options(args: argparse.Namespace, found: Resolved) -> EngineOptions:
    """The engine's own flags; the rest (weights, KV dtype, context, split, utilization) are the plan's."""
    _one_engines_flags(args)
    return EngineOptions(
        name=args.engine,
        version=engine_version(args),
        quantization=found.quantization,
        limit_mm_per_prompt=NO_MODALITIES if args.language_model_only else args.limit_mm_per_prompt,
        **fields(args, *ENGINE_FIELDS),
    )


DEFAULTS = {"page_size": 1, "dp": 1, "enable_dp_attention": False, "enforce_eager": False, "other_processes_bytes": 0}


def _no_engine_flags(args: argparse.Namespace) -> None:
    """Without --engine the plain method plans: an engine's own flag would be silently dropped, so it is a
    usage error that names the engine it belongs to."""
    for engine, names in (("vllm", VLLM_FLAGS), ("sglang", SGLANG_FLAGS)):
        given = [name for name in names if getattr(args, name, None) not in (None, DEFAULTS.get(name))]
        if given:
            flag = "--" + given[0].replace("_", "-").removesuffix("-bytes")
            raise UsageError(f"{flag} sizes an engine by its own rules: add --engine {engine}")


def _one_engines_flags(args: argparse.Namespace) -> None:
    """Another engine's flags are a usage error, not silently dropped; so is --dp without DP attention (a
    plan is of one TP group: SGLang's plain --dp runs that many copies of it)."""
    other = VLLM_FLAGS if args.engine == "sglang" else SGLANG_FLAGS
    given = [name for name in other if getattr(args, name) not in (None, DEFAULTS.get(name))]
    if args.language_model_only and args.engine == "sglang":
        given.append("language_model_only")
    if given:
        flag = "--" + given[0].replace("_", "-").removesuffix("-bytes")
        raise UsageError(f"{flag} is not a flag of --engine {args.engine}")
    if args.engine == "sglang" and args.dp > 1 and not args.enable_dp_attention:
        raise UsageError(
            f"--dp {args.dp} without --enable-dp-attention runs {args.dp} copies of the plan: plan one "
            "(drop --dp) and multiply, or add --enable-dp-attention"
        )
