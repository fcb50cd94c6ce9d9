"""`gpumem-tui plan`: will this model fit on these GPUs for this load, and with how much to spare. The options
are plan_opts.py's; the text, plan_view.py's."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.engine_opts import ENGINE_FIELDS
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.cli.output import print_json, reader_may_leave
from gpumem_tui.cli.plan_resolve import Resolved, plan_input
from gpumem_tui.cli.planargs import fields
from gpumem_tui.planner.report import serving_json, split_reason
from gpumem_tui.planner.serving import EngineOptions, serve
from gpumem_tui.planner.vllm.launch import model_argument
from gpumem_tui.planner.vllm.vision import NO_MODALITIES
from gpumem_tui.units import fmt_both


def run(args: argparse.Namespace) -> int:
    found = Resolved(args)
    inp = plan_input(args, found)
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
    return 1 if args.check and not serving.fits else 0


def engine_options(args: argparse.Namespace, found: Resolved) -> EngineOptions:
    """The engine's own flags; the rest (weights, KV dtype, context, split, utilization) are the plan's."""
    return EngineOptions(
        name=args.engine,
        version=args.vllm_version,
        quantization=found.quantization,
        limit_mm_per_prompt=NO_MODALITIES if args.language_model_only else args.limit_mm_per_prompt,
        **fields(args, *ENGINE_FIELDS),
    )
