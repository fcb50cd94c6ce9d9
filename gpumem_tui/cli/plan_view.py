"""`plan` as text: what was asked, the per-GPU bands or the engine's own numbers, and the verdict."""

from __future__ import annotations

from rich.text import Text

from gpumem_tui.cli.outlook import print_outlook
from gpumem_tui.cli.output import console, say, table
from gpumem_tui.planner.records import Plan
from gpumem_tui.planner.report import cross_check, engine_label, engine_launch, serving_verdict, verdict
from gpumem_tui.planner.serving import Serving
from gpumem_tui.planner.sglang.records import SglangPrediction
from gpumem_tui.planner.vllm import EnginePrediction
from gpumem_tui.planner.vllm.launch import ServedModel
from gpumem_tui.text import literal
from gpumem_tui.units import GB, GIB, fmt, fmt_both

BAND_LABELS = {
    "weights": "weights",
    "kv_cache": "KV cache",
    "overhead": "overhead",
    "spare": "spare",
    "reserved_by_utilization": "left by utilization",
}


def print_heading(out, plan: Plan, why: str | None = None, fraction_sized: bool = False) -> None:
    """What was asked: the model and formats, the load, the GPUs and the capacity planned with, and why the
    split is more than one GPU when none was asked for. `fraction_sized`: the engine sizes by its own fraction
    (SGLang), so the utilization is only the plain cross-check's."""
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
    whose = " for the plain cross-check" if fraction_sized else ""
    say(
        out,
        f"{inp.users:,} conversation(s) x {inp.context:,} tokens on {plan.gpus} x {inp.gpu.key}"
        f" ({reported}{using}), {inp.utilization:.0%} utilization{whose}",
    )
    if why:
        say(out, why)
    out.print()


def print_engine_plan(
    serving: Serving, notes: list[str], why: str | None = None, model: ServedModel | None = None
) -> None:
    """The engine decides: its per-GPU numbers and log lines, its verdict, the plain cross-check, then the
    command that launches the plan (`model`: the model argument, else the catalog's id)."""
    out, engine = console(), serving.engine
    assert engine is not None
    print_heading(out, serving.plan, why, fraction_sized=isinstance(engine.prediction, SglangPrediction))
    if isinstance(engine.prediction, SglangPrediction):
        from gpumem_tui.cli.sglang_view import print_sglang

        print_sglang(out, engine.prediction, engine.gpus)
    else:
        print_engine(out, engine.prediction, engine.tp)
    out.print()
    say(out, serving_verdict(serving), style="bold")
    say(out, cross_check(serving), style="dim")
    for line in notes + serving.warnings:
        say(out, f"  ! {line}", style="yellow")
    launch = engine_launch(engine, model)
    out.print()
    label = engine_label(engine.prediction.name, engine.settings.version)
    # the line reproduces the prediction; one that fails says so where it is copied from
    said = (
        f"Launch with {label}:" if engine.starts else f"Launch with {label} (as asked: it does not start, see above):"
    )
    say(out, said, style="bold")
    for note in launch.notes:
        say(out, f"  ~ {note}")
    out.print(Text(literal(launch.command)), soft_wrap=True)  # one line, whatever the width: it is copied


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


def print_engine(out, p: EnginePrediction, tp: int) -> None:
    rows = [
        [name, f"{value / GIB:,.2f}"]
        for name, value in [
            ("total (as CUDA reports it)", p.total_gpu_memory_bytes),
            ("requested (x utilization)", p.requested_memory_bytes),
            ("weights", p.weights_bytes),
            ("non-torch", p.non_torch_bytes),
            ("activation peak", p.activation_peak_bytes),
            ("CUDA graphs" + (" (charged)" if p.cudagraph_charged else " (outside the budget)"), p.cudagraph_bytes),
            ("KV cache", p.kv_cache_bytes),
        ]
    ]
    out.print(table(f"vLLM {p.version} on each of {tp * len(p.ranks)} GPU(s)", ["per GPU", "GiB"], rows, {1}))
    out.print(
        Text(
            f"{p.num_gpu_blocks:,} blocks of {p.block_size} tokens; max_num_seqs {p.max_num_seqs}, "
            f"max_num_batched_tokens {p.max_num_batched_tokens:,}, max_model_len {p.max_model_len:,}"
        )
    )
    for line in p.term_lines():
        say(out, f"  + {line}")
    print_outlook(out, "Predicted log lines:", p)
