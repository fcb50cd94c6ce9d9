"""`gpumem-tui plan`: will this model fit on these GPUs for this load, and with how much to spare."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.engine_opts import add_engine_options, engine_options, print_engine
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.cli.output import console, print_json, reader_may_leave, say, table
from gpumem_tui.cli.planargs import Resolved, add_load_options, add_model_options, plan_input
from gpumem_tui.planner.records import Plan
from gpumem_tui.planner.report import cross_check, serving_json, serving_verdict, split_reason, verdict
from gpumem_tui.planner.serving import Serving, serve
from gpumem_tui.units import GB, GIB, fmt, fmt_both

BAND_LABELS = {
    "weights": "weights",
    "kv_cache": "KV cache",
    "overhead": "overhead",
    "spare": "spare",
    "reserved_by_utilization": "left by utilization",
}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("plan", help="size one deployment: weights, KV cache, overhead, spare, per GPU")
    add_model_options(parser)
    add_load_options(parser)
    add_engine_options(parser)
    parser.add_argument("--check", action="store_true", help="exit 1 when the plan does not fit (for CI)")
    parser.set_defaults(run=run)


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
    with reader_may_leave():
        if args.json:
            data = serving_json(serving)
            data["warnings"] = extra + data["warnings"]
            data["split_reason"] = why
            print_json(data)
        elif serving.engine:
            print_engine_plan(serving, extra, why)
        else:
            print_plan(serving.plan, extra, why)
    return 1 if args.check and not serving.fits else 0


def print_heading(out, plan: Plan, why: str | None = None) -> None:
    """What was asked: the model and formats, the load, the GPUs and the capacity planned with, and why the
    split is more than one GPU when none was asked for."""
    inp = plan.input
    say(
        out,
        f"{inp.model.id}: {plan.params_total / 1e9:,.2f} B parameters"
        f" ({plan.params_active / 1e9:,.2f} B active per token), {inp.weights_format.name} weights,"
        f" {'16-bit' if inp.kv_dtype == 'auto' else inp.kv_dtype} KV cache",
    )
    custom = inp.gpu.capacity_is_nominal and inp.capacity_bytes
    card = inp.gpu.capacity_bytes
    reported = "as given" if custom else f"reports {fmt(card)} = {fmt(card, 'GiB')}"
    planned = f"; planning with {fmt(inp.capacity)} = {fmt(inp.capacity, 'GiB')}"
    using = planned if inp.capacity_bytes and not custom else ""
    say(
        out,
        f"{inp.users:,} conversation(s) x {inp.context:,} tokens on {plan.gpus} x {inp.gpu.key}"
        f" ({reported}{using}), {inp.utilization:.0%} utilization",
    )
    if why:
        say(out, why)
    out.print()


def print_engine_plan(serving: Serving, notes: list[str], why: str | None = None) -> None:
    """The engine decides: its per-GPU numbers and log lines, its verdict, then the plain cross-check."""
    out, engine = console(), serving.engine
    assert engine is not None
    print_heading(out, serving.plan, why)
    print_engine(out, engine.prediction, engine.tp)
    out.print()
    say(out, serving_verdict(serving), style="bold")
    say(out, cross_check(serving), style="dim")
    for line in notes + serving.warnings:
        say(out, f"  ! {line}", style="yellow")


def print_plan(plan: Plan, notes: list[str], why: str | None = None) -> None:
    """The plain method decides: the per-GPU bands, the totals and its verdict."""
    out = console()
    print_heading(out, plan, why)
    rows = [
        [BAND_LABELS.get(b.name, b.name), f"{b.bytes / GB:,.1f}", f"{b.bytes / GIB:,.1f}"] for b in plan.per_gpu.bands
    ]
    rows.append(["capacity", f"{plan.per_gpu.capacity_bytes / GB:,.1f}", f"{plan.per_gpu.capacity_bytes / GIB:,.1f}"])
    out.print(table(f"Per GPU ({plan.gpus} GPU{'s' if plan.gpus > 1 else ''})", ["band", "GB", "GiB"], rows, {1, 2}))
    out.print()
    usable = fmt(plan.per_gpu.usable_bytes * plan.gpus)
    say(
        out,
        f"All GPUs: weights {fmt_both(plan.weights_bytes)}, KV cache {fmt_both(plan.kv_bytes)}"
        f" at {plan.kv_bytes_per_token:,} bytes per token, usable {usable}",
    )
    say(out, verdict(plan), style="bold")
    for line in notes + plan.warnings:
        say(out, f"  ! {line}", style="yellow")
