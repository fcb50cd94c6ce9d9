"""`gpumem-tui fit`: which GPUs hold which models, as the fewest GPUs per model, format and card."""

from __future__ import annotations

import argparse
import itertools

from rich.text import Text

from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli.output import console, print_json, table
from gpumem_tui.cli.planargs import count, fraction, kv_dtype, size, vllm_version
from gpumem_tui.planner.fit import DEFAULT_CONTEXT, DEFAULT_USERS, FitCell, fit_matrix
from gpumem_tui.planner.serving import EngineOptions
from gpumem_tui.planner.vllm import DEFAULT_VERSION
from gpumem_tui.units import fmt

DEFAULT_MODELS = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "gpt-oss-120b", "deepseek-v3"]
DEFAULT_GPUS = ["rtx4090", "l40s", "a100", "h100", "h200", "b200"]
DEFAULT_FORMATS = ["bf16", "fp8", "int4"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fit", help="table: fewest GPUs (1/2/4/8) for each model, format and GPU")
    parser.add_argument(
        "--models",
        "--model",
        nargs="+",
        action="extend",
        metavar="ID",
        help=f"catalog model ids or aliases, one row group each; repeatable (default: {' '.join(DEFAULT_MODELS)})",
    )
    parser.add_argument(
        "--gpu",
        dest="gpus",
        nargs="+",
        action="extend",
        metavar="KEY",
        help=f"catalog GPU keys or aliases, one column each; repeatable (default: {' '.join(DEFAULT_GPUS)})",
    )
    parser.add_argument("--gpus", nargs="*", action=_GpusIsACount, help=argparse.SUPPRESS)
    parser.add_argument(
        "--weights",
        nargs="+",
        default=DEFAULT_FORMATS,
        metavar="FMT",
        help=f"weight formats, one row each (default: {' '.join(DEFAULT_FORMATS)})",
    )
    parser.add_argument(
        "--users",
        type=count(1),
        default=DEFAULT_USERS,
        metavar="N",
        help=f"conversations at once (default {DEFAULT_USERS})",
    )
    parser.add_argument(
        "--context",
        type=count(1),
        default=DEFAULT_CONTEXT,
        metavar="TOKENS",
        help=f"tokens per conversation (default {DEFAULT_CONTEXT:,})",
    )
    parser.add_argument(
        "--utilization", type=fraction, default=0.9, metavar="F", help="share of each GPU to fill (default 0.9)"
    )
    parser.add_argument("--overhead", type=size, default=4 * 10**9, metavar="SIZE", help="per GPU (default 4GB)")
    parser.add_argument(
        "--kv-dtype",
        type=kv_dtype,
        metavar="DT",
        help="KV dtype for every row (default: 16-bit for 16-bit weights, fp8 otherwise)",
    )
    parser.add_argument(
        "--engine",
        choices=["vllm"],
        help="the fewest GPUs by the engine's own sizing, as `plan --engine` searches them (default: the plain method)",
    )
    parser.add_argument(
        "--vllm-version", type=vllm_version, default=DEFAULT_VERSION, metavar="X.Y.Z", help=f"default {DEFAULT_VERSION}"
    )
    parser.add_argument("--catalog", action="append", default=[], metavar="DIR", help="extra catalog directory")
    parser.add_argument("--json", action="store_true", help="print JSON: one object per cell")
    parser.set_defaults(run=run)


class _GpusIsACount(argparse.Action):
    """`--gpus` is a count of GPUs in every other command; here the cards are named with `--gpu`."""

    def __call__(self, parser, namespace, values, option_string=None):  # noqa: ARG002 (argparse's signature)
        parser.error(
            "--gpus is a count of GPUs elsewhere; name the cards to compare with --gpu KEY [KEY ...]"
            + (f", e.g. --gpu {' '.join(values)}" if values else "")
        )


def run(args: argparse.Namespace) -> int:
    catalog = load_catalog(args.catalog)
    models = [catalog.model(m) for m in args.models or DEFAULT_MODELS]
    gpus = [catalog.gpu(g) for g in args.gpus or DEFAULT_GPUS]
    formats = [catalog.format(f) for f in args.weights]
    engine = EngineOptions(name=args.engine, version=args.vllm_version) if args.engine else None
    cells = fit_matrix(
        models,
        formats,
        gpus,
        users=args.users,
        context=args.context,
        utilization=args.utilization,
        overhead_bytes=args.overhead,
        kv_dtype=args.kv_dtype,
        engine=engine,
    )
    if args.json:
        print_json([cell.model_dump() for cell in cells])
        return 0
    rows = []
    for (model, weights), group in itertools.groupby(cells, key=lambda c: (c.model, c.weights_format)):
        members = list(group)
        rows.append([model, f"{weights} (KV {members[0].kv_dtype})", *(_cell(c) for c in members)])
    out = console()
    method = f"by vLLM {args.vllm_version}'s own sizing" if engine else f"{fmt(args.overhead)} overhead per GPU"
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
    return 0


def _cell(cell: FitCell) -> Text:
    if cell.gpus is None:
        return Text("-", style="dim")
    return Text(f"{cell.gpus}*", style="bold yellow") if cell.amber else Text(str(cell.gpus))
