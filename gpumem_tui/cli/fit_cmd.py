"""`gpumem-tui fit`: which GPUs hold which models, as the fewest GPUs per model, format and card. The options
are fit_opts.py's."""

from __future__ import annotations

import argparse
import itertools

from rich.text import Text

from gpumem_tui.catalog import load_catalog
from gpumem_tui.catalog.schema import ModelSpec
from gpumem_tui.cli.engine_opts import engine_version
from gpumem_tui.cli.fit_opts import DEFAULT_GPUS, DEFAULT_MODELS
from gpumem_tui.cli.output import console, print_json, table
from gpumem_tui.cli.planargs import fields
from gpumem_tui.planner.fit import FitCell, fit_matrix
from gpumem_tui.planner.report import engine_label
from gpumem_tui.planner.serving import EngineOptions, past_maximum
from gpumem_tui.text import literal
from gpumem_tui.units import fmt


def run(args: argparse.Namespace) -> int:
    catalog = load_catalog(args.catalog)
    models = [catalog.model(m) for m in args.models or DEFAULT_MODELS]
    gpus = [catalog.gpu(g) for g in args.gpus or DEFAULT_GPUS]
    formats = [catalog.format(f) for f in args.weights]
    engine = EngineOptions(name=args.engine, version=engine_version(args)) if args.engine else None
    load = fields(args, "users", "context", "utilization", "kv_dtype")
    cells = fit_matrix(models, formats, gpus, overhead_bytes=args.overhead, engine=engine, **load)
    if args.json:
        print_json([cell.model_dump() for cell in cells])
        return 0
    rows = []
    for (model, weights), group in itertools.groupby(cells, key=lambda c: (c.model, c.weights_format)):
        members = list(group)
        rows.append([model, f"{weights} (KV {members[0].kv_dtype})", *(_cell(c) for c in members)])
    out = console()
    method = (
        f"by {engine_label(args.engine, engine_version(args))}'s own sizing"
        if engine
        else f"{fmt(args.overhead)} overhead per GPU"
    )
    out.print(
        table(
            f"Fewest GPUs for {args.users} conversations x {args.context:,} tokens, "
            f"{method}, {args.utilization:.0%} fill",
            ["model", "weights", *(g.key for g in gpus)],
            rows,
            set(range(2, 2 + len(gpus))),
        )
    )
    out.print(
        Text(
            "  n = GPUs in the split (1/2/4/8); - = not even 8; * amber: under 5 % spare "
            f"({'of the KV pool' if engine else 'of the usable memory'}). "
            "Memory only: check speed separately.",
            style="dim",
        )
    )
    for line in _past_maximum(models, args.context, args.engine):
        out.print(Text(line))
    return 0


def _past_maximum(models: list[ModelSpec], context: int, engine: str | None) -> list[str]:
    """A line for each model whose maximum context the asked length passes: the engine refuses to start with it
    (vLLM's rule where no engine is named), whatever the table says of memory."""
    then = "so no split starts it" if engine else "though memory alone is counted above"
    refused = (past_maximum(engine or "vllm", model, context) for model in models)
    return [f"  ! {literal(said)}, {then}" for said in refused if said]


def _cell(cell: FitCell) -> Text:
    if cell.gpus is None:
        return Text("-", style="dim")
    return Text(f"{cell.gpus}*", style="bold yellow") if cell.amber else Text(str(cell.gpus))
