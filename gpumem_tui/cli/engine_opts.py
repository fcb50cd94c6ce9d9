"""`plan --engine vllm` options and output: vLLM's own startup numbers, predicted per release."""

from __future__ import annotations

import argparse

from rich.text import Text

from gpumem_tui.cli.output import say, table
from gpumem_tui.cli.planargs import Resolved, count, size, vllm_version
from gpumem_tui.planner.dtypes import PlanInputError
from gpumem_tui.planner.serving import EngineOptions
from gpumem_tui.planner.vllm import DEFAULT_VERSION, EnginePrediction
from gpumem_tui.planner.vllm.vision import NO_MODALITIES, mm_limits
from gpumem_tui.units import GIB


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("engine sizing (--engine vllm)")
    group.add_argument(
        "--engine",
        choices=["vllm"],
        help="decide by the engine's own sizing (split, verdict, most users, longest context)",
    )
    group.add_argument(
        "--vllm-version", type=vllm_version, default=DEFAULT_VERSION, metavar="X.Y.Z", help=f"default {DEFAULT_VERSION}"
    )
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
    group.add_argument("--kv-cache-memory", type=size, metavar="SIZE", help="fixed KV cache size (0.10.2+)")
    group.add_argument(
        "--other-processes", type=size, default=0, metavar="SIZE", help="GPU memory other processes hold at start"
    )


def limits(text: str) -> dict[str, int]:
    """`--limit-mm-per-prompt` as counts per modality; a bad value is argparse's one-line error."""
    try:
        return mm_limits(text)
    except PlanInputError as exc:
        raise argparse.ArgumentTypeError(
            str(exc).removeprefix("--limit-mm-per-prompt: ").removeprefix("--limit-mm-per-prompt ")
        ) from None


def engine_options(args: argparse.Namespace, found: Resolved) -> EngineOptions:
    """The engine's own flags; the rest (weights, KV dtype, context, split, utilization) are the plan's."""
    return EngineOptions(
        name=args.engine,
        version=args.vllm_version,
        quantization=found.quantization,
        pp=args.pp,
        dtype=args.dtype,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        enforce_eager=args.enforce_eager,
        kv_cache_memory_bytes=args.kv_cache_memory,
        other_processes_bytes=args.other_processes,
        limit_mm_per_prompt=NO_MODALITIES if args.language_model_only else args.limit_mm_per_prompt,
    )


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
    say(out, "Predicted log lines:", style="bold")
    for line in p.log_lines:
        say(out, f"  {line}")
    for line in p.failures:
        say(out, f"  x will fail: {line}", style="bold red")
    for line in p.warnings:
        say(out, f"  ! {line}", style="yellow")
    for line in p.assumed:
        say(out, f"  ~ {line}")
