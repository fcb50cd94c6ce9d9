"""`gpumem-tui fit`: the options; the action (fit_cmd.py) is imported when it runs."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.engine_opts import add_engine_choice
from gpumem_tui.cli.lazy import action
from gpumem_tui.cli.planargs import count, fraction, kv_dtype, size
from gpumem_tui.planner.fit import DEFAULT_CONTEXT, DEFAULT_USERS

DEFAULT_MODELS = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "gpt-oss-120b", "deepseek-v3"]
DEFAULT_GPUS = ["rtx4090", "l40s", "a100", "h100", "h200", "b200"]
DEFAULT_FORMATS = ["bf16", "fp8", "int4"]


def options(parser: argparse.ArgumentParser) -> None:
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
    add_engine_choice(
        parser,
        "the fewest GPUs by the engine's own sizing, as `plan --engine` searches them (default: the plain method)",
    )
    parser.add_argument("--catalog", action="append", default=[], metavar="DIR", help="extra catalog directory")
    parser.add_argument("--json", action="store_true", help="print JSON: one object per cell")
    parser.set_defaults(run=action("fit_cmd:run"))


class _GpusIsACount(argparse.Action):
    """`--gpus` is a count of GPUs in every other command; here the cards are named with `--gpu`, and each cell
    finds its own count. Names given to it are echoed as the `--gpu` to write; a count is not a card key."""

    def __call__(self, parser, namespace, values, option_string=None):  # noqa: ARG002 (argparse's signature)
        named = values and not any(value.isdigit() for value in values)
        parser.error(
            "--gpus is a count of GPUs elsewhere; fit finds each card's count itself: name the cards to compare "
            f"with --gpu KEY [KEY ...], e.g. --gpu {' '.join(values) if named else 'h100 h200'}"
        )
