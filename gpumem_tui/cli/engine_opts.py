"""`plan --engine vllm|sglang` options: the engine's own flags, sized by its startup rules per release (the
numbers are printed by plan_view.py and sglang_view.py)."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.planargs import count, one_line, size, vllm_version
from gpumem_tui.planner.dtypes import PlanInputError
from gpumem_tui.planner.sglang.versions import DEFAULT_VERSION as SGLANG_DEFAULT
from gpumem_tui.planner.sglang.versions import known_version as known_sglang
from gpumem_tui.planner.vllm.versions import DEFAULT_VERSION
from gpumem_tui.planner.vllm.vision import mm_limits

sglang_version = one_line(known_sglang)
"""An SGLang release whose sizing rules the planner knows."""


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("engine sizing (--engine vllm)")
    add_engine_choice(group, "decide by the engine's own sizing (split, verdict, most users, longest context)")
    group.add_argument("--pp", type=count(1), default=1, metavar="N", help="pipeline-parallel stages")
    group.add_argument("--dtype", default="auto", help="auto, bfloat16, float16, float32")
    group.add_argument("--max-num-seqs", type=count(1), metavar="N", help="default: the release's, by GPU memory")
    group.add_argument(
        "--max-num-batched-tokens",
        type=count(1),
        metavar="N",
        help="tokens in one scheduler step (default: the release's)",
    )
    group.add_argument("--enforce-eager", action="store_true", help="no CUDA graphs")
    group.add_argument(
        "--limit-mm-per-prompt",
        type=limits,
        metavar="JSON",
        help="items per prompt by modality, as vLLM takes it: '{\"image\": 0}' loads no vision tower",
    )
    group.add_argument("--language-model-only", action="store_true", help="as vLLM's flag: every modality limited to 0")
    group.add_argument(
        "--kv-cache-memory",
        dest="kv_cache_memory_bytes",
        type=size,
        metavar="SIZE",
        help="fixed KV cache size (0.10.2+)",
    )
    group.add_argument(
        "--other-processes",
        dest="other_processes_bytes",
        type=size,
        default=0,
        metavar="SIZE",
        help="GPU memory other processes hold at start",
    )
    add_sglang_options(parser)


def _open_fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1")
    return value


def _prefill(text: str) -> int:
    """A chunk size in tokens, or -1 (SGLang's way to turn chunked prefill off)."""
    return -1 if text.strip() == "-1" else count(1)(text)


def add_sglang_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("engine sizing (--engine sglang)")
    group.add_argument(
        "--mem-fraction-static", type=_open_fraction, metavar="F", help="default: the one the release picks"
    )
    group.add_argument(
        "--chunked-prefill-size", type=_prefill, metavar="N", help="tokens per prefill chunk, -1 for none"
    )
    group.add_argument("--cuda-graph-max-bs", type=count(1), metavar="N", help="largest batch captured")
    group.add_argument("--page-size", type=count(1), default=1, metavar="N", help="tokens per KV page (default 1)")
    group.add_argument(
        "--dp", type=count(1), default=1, metavar="N", help="DP attention ranks (with --enable-dp-attention)"
    )
    group.add_argument("--enable-dp-attention", action="store_true", help="attention data-parallel inside the TP group")
    group.add_argument("--max-total-tokens", type=count(1), metavar="N", help="cap the KV pool at N tokens")


def add_engine_choice(parser: argparse.ArgumentParser | argparse._ArgumentGroup, engine_help: str) -> None:
    """`--engine` (the engines whose own sizing the planner knows) and the release it sizes by: `plan`, `fit`."""
    parser.add_argument("--engine", choices=["vllm", "sglang"], help=engine_help)
    parser.add_argument(
        "--vllm-version", type=vllm_version, default=DEFAULT_VERSION, metavar="X.Y.Z", help=f"default {DEFAULT_VERSION}"
    )
    parser.add_argument(
        "--sglang-version",
        type=sglang_version,
        default=SGLANG_DEFAULT,
        metavar="X.Y.Z",
        help=f"default {SGLANG_DEFAULT}, the newest the rules know",
    )


def engine_version(args: argparse.Namespace) -> str:
    """The release of the engine asked for."""
    return args.sglang_version if args.engine == "sglang" else args.vllm_version


def limits(text: str) -> dict[str, int]:
    """`--limit-mm-per-prompt` as counts per modality; a bad value is argparse's one-line error."""
    try:
        return mm_limits(text)
    except PlanInputError as exc:
        raise argparse.ArgumentTypeError(
            str(exc).removeprefix("--limit-mm-per-prompt: ").removeprefix("--limit-mm-per-prompt ")
        ) from None
