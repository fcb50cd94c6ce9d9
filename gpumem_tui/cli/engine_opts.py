"""`plan --engine vllm` options: the engine's own flags, sized by vLLM's startup rules per release (the
numbers are printed by plan_view.py)."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.planargs import count, size, vllm_version
from gpumem_tui.planner.dtypes import PlanInputError
from gpumem_tui.planner.vllm.versions import DEFAULT_VERSION
from gpumem_tui.planner.vllm.vision import mm_limits

ENGINE_FIELDS = (
    "pp",
    "dtype",
    "max_num_seqs",
    "max_num_batched_tokens",
    "enforce_eager",
    "kv_cache_memory_bytes",
    "other_processes_bytes",
)
"""The options below whose dests are the EngineOptions fields they fill (plan_cmd.engine_options)."""


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


def add_engine_choice(parser: argparse.ArgumentParser | argparse._ArgumentGroup, engine_help: str) -> None:
    """`--engine` (the engines whose own sizing the planner knows) and the release it sizes by: `plan`, `fit`."""
    parser.add_argument("--engine", choices=["vllm"], help=engine_help)
    parser.add_argument(
        "--vllm-version", type=vllm_version, default=DEFAULT_VERSION, metavar="X.Y.Z", help=f"default {DEFAULT_VERSION}"
    )


def limits(text: str) -> dict[str, int]:
    """`--limit-mm-per-prompt` as counts per modality; a bad value is argparse's one-line error."""
    try:
        return mm_limits(text)
    except PlanInputError as exc:
        raise argparse.ArgumentTypeError(
            str(exc).removeprefix("--limit-mm-per-prompt: ").removeprefix("--limit-mm-per-prompt ")
        ) from None
