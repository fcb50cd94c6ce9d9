"""Plan options shared by `plan`, `offload`, `train` and the TUI: model, GPU, formats, load; and the
argparse types every command's options share. Read when the parser is built; what the options name is
resolved when a command runs (plan_resolve.py, node_plan.py)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any, TypeVar

from gpumem_tui.planner.dtypes import kv_dtype_bytes
from gpumem_tui.planner.vllm.versions import DEFAULT_VERSION, known_version
from gpumem_tui.units import parse_fraction, parse_size

T = TypeVar("T")


def count(minimum: int, maximum: int = 10**9):
    """An argparse type for whole numbers from `minimum` to `maximum`, with a plain error."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace(",", "").replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{text!r} must be from {minimum:,} to {maximum:,}")
        return value

    return parse


def seconds(minimum: float = 0.0, maximum: float = 10**7):
    """An argparse type for a finite number of seconds in [minimum, maximum] (every timeout, interval and
    offset of every command)."""
    return number(minimum, maximum, "seconds", "a number of seconds")


def number(minimum: float, maximum: float, unit: str, what: str = "a number"):
    """An argparse type for a finite number in [minimum, maximum], its error worded in `unit` (`seconds`,
    `GB/s`, `times real time`): nan, inf and anything out of range are refused, never computed with."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not (math.isfinite(value) and minimum <= value <= maximum):
            raise argparse.ArgumentTypeError(f"{text!r} must be from {minimum:g} to {maximum:g} {unit}")
        return value

    return parse


def one_line(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse type of `parse`: its ValueError (a PlanInputError is one) is argparse's one-line error."""

    def typed(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return typed


def _known_kv_dtype(text: str) -> str:
    kv_dtype_bytes(text)
    return text


def _overhead(text: str) -> tuple[int, float | None]:
    raw = text.strip()
    return (4 * 10**9, parse_fraction(raw)) if raw.endswith("%") else (parse_size(raw), None)


def _positive_size(text: str) -> int:
    value = parse_size(text)
    if value <= 0:
        raise ValueError(f"{text!r} must be more than 0")
    return value


kv_dtype = one_line(_known_kv_dtype)
"""A KV-cache dtype the planner sizes (auto, fp8, ...), as typed."""
vllm_version = one_line(known_version)
"""A vLLM release whose sizing rules the planner knows."""
overhead = one_line(_overhead)
"""`4GB` (per GPU) or `10%` (of each GPU's weights + KV) as (fixed bytes, share or None)."""
size = one_line(_positive_size)
"""A size above zero with its unit (a GPU of 0 bytes plans nothing)."""
fraction = one_line(parse_fraction)


def fields(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The named options as keyword arguments, for the record fields whose names their dests share."""
    return {name: getattr(args, name) for name in names}


class SameSetting(argparse.Action):
    """One setting under two names (`--weights` / `--quantization`, `--context` / `--max-model-len`): both
    store in one dest, and giving both with different values is a usage error."""

    def __call__(self, parser, namespace, values, option_string=None):
        mark = f"_{self.dest}_given_as"
        before = getattr(namespace, mark, None)
        if before and before[1] != values:
            parser.error(f"{before[0]} {before[1]} and {option_string} {values} name the same setting; give one")
        setattr(namespace, mark, (option_string, values))
        setattr(namespace, self.dest, values)


def same_setting(group, first: tuple[str, str, str], second: tuple[str, str, str], **first_only: Any) -> None:
    """One setting under two names, each given as (name, metavar, help); `first_only` (a type, a default) goes
    to the first name, and its type to the second too."""
    name, metavar, text = first
    group.add_argument(name, action=SameSetting, metavar=metavar, help=text, **first_only)
    typed = {"type": first_only["type"]} if "type" in first_only else {}
    other, metavar, text = second
    group.add_argument(other, dest=name.removeprefix("--"), action=SameSetting, metavar=metavar, help=text, **typed)


def context_setting(group, text: str, **default: Any) -> None:
    """`--context` (help `text`) and its vLLM name `--max-model-len`: one setting, a count of tokens."""
    same_setting(
        group,
        ("--context", "TOKENS", text),
        ("--max-model-len", "TOKENS", "the same as --context"),
        type=count(1),
        **default,
    )


def add_model_options(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", metavar="ID", help="catalog model id or alias (see `gpumem-tui catalog`)")
    which.add_argument(
        "--config", metavar="PATH", help="a config.json, a model directory, or an HF id in the local cache"
    )
    gpu = parser.add_mutually_exclusive_group(required=False)
    gpu.add_argument("--gpu", metavar="KEY", help="catalog GPU key or alias, e.g. h100, h200, a100, l40s")
    parser.add_argument(
        "--gpu-memory",
        type=size,
        metavar="SIZE",
        help="override the card's capacity, e.g. 80GB (default: what the card reports)",
    )
    same_setting(
        parser,
        (
            "--weights",
            "FMT",
            "weight format: bf16, fp8, int4, nf4, mxfp4, ... or a vLLM method (awq, gptq); default: "
            "the checkpoint's own",
        ),
        ("--quantization", "METHOD", "the same as --weights, in vLLM's words: fp8, w8a8, w4a16, gptq, awq, mxfp4"),
    )
    parser.add_argument("--catalog", action="append", default=[], metavar="DIR", help="extra catalog directory")
    parser.add_argument("--json", action="store_true", help="print JSON")


def add_load_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=count(1), metavar="N", help="GPUs in the split (default: the fewest of 1/2/4/8)")
    parser.add_argument(
        "--kv-dtype", type=kv_dtype, default="auto", metavar="DT", help="KV-cache dtype: auto (16-bit), fp8, ..."
    )
    context_setting(parser, "tokens per conversation: the engine's --max-model-len", default=8192)
    parser.add_argument("--users", type=count(1), default=1, metavar="N", help="conversations at once")
    parser.add_argument("--utilization", type=fraction, default=0.9, metavar="F", help="share of each GPU to fill")
    parser.add_argument(
        "--overhead",
        type=overhead,
        default=(4 * 10**9, None),
        metavar="SIZE|PCT",
        help="runtime overhead per GPU: a size (4GB) or a share of weights+KV (10%%)",
    )
    parser.add_argument(
        "--kv-heads",
        type=count(1),
        metavar="N",
        help="override the model's KV heads (e.g. = attention heads for the no-GQA estimate)",
    )


def add_plan_options(group, what: str) -> None:
    """The options that describe a manual plan (`what` says what it is for), shared by the TUI and check."""
    which = group.add_mutually_exclusive_group()
    which.add_argument("--model", metavar="ID", help=f"{what}: the model (catalog name or HF id)")
    which.add_argument("--config", metavar="PATH", help="... or its config.json, model directory or cached HF id")
    same_setting(
        group,
        ("--weights", "FMT", "weight format of the plan: bf16, fp8, int8, int4, mxfp4, or a vLLM method (awq)"),
        ("--quantization", "METHOD", "the same as --weights, in vLLM's words: fp8, w8a8, w4a16, awq"),
    )
    group.add_argument(
        "--kv-dtype", type=kv_dtype, default="auto", metavar="DT", help="KV cache dtype of the plan (auto, fp8)"
    )
    context_setting(group, "max model length of the plan")
    group.add_argument("--users", type=count(1), default=1, metavar="N", help="conversations at that length")
    group.add_argument(
        "--utilization",
        type=fraction,
        default=0.9,
        metavar="F",
        help="--gpu-memory-utilization of the plan (default 0.9)",
    )
    group.add_argument("--gpus", type=count(1), metavar="N", help="split of the plan")
    group.add_argument(
        "--vllm-version",
        type=vllm_version,
        default=DEFAULT_VERSION,
        metavar="X.Y.Z",
        help=f"release whose sizing rules the plan follows (default {DEFAULT_VERSION})",
    )
    group.add_argument("--catalog", action="append", default=[], metavar="DIR", help="extra catalog directory")
