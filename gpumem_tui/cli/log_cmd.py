"""`gpumem-tui log FILE [--json]`: the memory numbers a vLLM or SGLang startup log states (the options:
log_opts.py)."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.errors import UsageError, warn
from gpumem_tui.cli.log_compare import run_compare
from gpumem_tui.cli.output import console, print_json, say, table
from gpumem_tui.sources.bounded_file import BoundedFileError, read_ends
from gpumem_tui.sources.engines.logoom import details
from gpumem_tui.sources.engines.logparse import LOG_END_BYTES, parse_log
from gpumem_tui.sources.engines.startup_log import KEYS, PER_RANK_KEYS, SGLANG_KEYS, StartupLog
from gpumem_tui.text import literal
from gpumem_tui.units import fmt_auto

LABELS = {
    "vllm_version": "vLLM version",
    "model": "model",
    "tensor_parallel_size": "tensor parallel",
    "dtype": "dtype",
    "quantization": "quantization",
    "kv_cache_dtype": "KV cache dtype",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "max_model_len": "max model length",
    "total_gpu_memory_gib": "GPU total",
    "weights_gib": "weights",
    "non_torch_gib": "non-torch",
    "activation_peak_gib": "activation peak",
    "cudagraph_estimated_gib": "CUDA graphs (estimated)",
    "cudagraph_gib": "CUDA graphs (captured)",
    "kv_cache_gib": "KV cache",
    "num_gpu_blocks": "GPU blocks",
    "kv_cache_tokens": "KV cache tokens",
    "max_concurrency": "max concurrency",
    "free_before_weights_gib": "free before weights",
    "free_after_weights_gib": "free after weights",
    "free_after_pool_gib": "free after the pool",
    "max_running_requests": "max running requests",
}


VLLM_ONLY = ("vllm_version", "num_gpu_blocks", "non_torch_gib", "activation_peak_gib", "cudagraph_estimated_gib")
"""Keys only a vLLM log states: left out of an SGLang log's table."""
SGLANG_LABELS = {"gpu_memory_utilization": "mem_fraction_static"}
"""Where the record keeps an SGLang setting under vLLM's name (the log parser reads it into that key)."""


def run(args: argparse.Namespace) -> int:
    try:  # a file or a pipe (`kubectl logs POD | gpumem-tui log /dev/stdin`), bounded: never /dev/zero
        head, tail, passed = read_ends(args.file, LOG_END_BYTES, LOG_END_BYTES)
    except BoundedFileError as exc:
        raise UsageError(f"cannot read {args.file}: {exc}") from None
    text = _text(head, tail, passed)
    if passed:
        warn(
            f"{args.file}: {fmt_auto(passed, digits=0)} in the middle not read: its first and last "
            f"{fmt_auto(LOG_END_BYTES, digits=0)} were (the start-up, and what ended it)"
        )
    parsed = parse_log(text)
    if parsed.engine is None and not parsed.failures:
        raise UsageError(f"{args.file}: no vLLM or SGLang startup lines found")
    if args.compare:
        run_compare(args, parsed, text)
    elif args.json:
        print_json(parsed.model_dump(mode="json"))
    else:
        _print(parsed)
    return FAILED_START if parsed.failures else 0


FAILED_START = 1
"""The exit status for a log that shows the start failed (log_opts.py's help says so)."""


def _text(head: bytes, tail: bytes, passed: int) -> str:
    """The log's text; where its middle was passed over, the lines cut at either side left out."""
    if not passed:
        return (head + tail).decode("utf-8", errors="replace")
    start = head.rpartition(b"\n")[0]
    end = tail.partition(b"\n")[2]
    return (start + b"\n" + end).decode("utf-8", errors="replace")


def _print(parsed: StartupLog) -> None:
    """The failure first, where the start failed; then the values the log states, then how the start ended."""
    out = console()
    for failure in parsed.failures:
        say(out, f"FAILED ({failure.kind}): {failure.message}")
        for line in details(failure.oom) if failure.oom else []:
            say(out, f"    {line}")
    if parsed.failures:
        out.print()
    sglang = parsed.engine == "sglang"
    keys = [k for k in KEYS if not (sglang and k in VLLM_ONLY)] + list(SGLANG_KEYS if sglang else ())
    labels = LABELS | (SGLANG_LABELS if sglang else {})
    rows = [[labels[key], _value(key, getattr(parsed, key))] for key in keys]
    out.print(table(f"{parsed.engine or 'engine'} startup log", ["", "value"], rows, right={1}))
    if parsed.ranks:
        headers = ["rank", *(LABELS[k] for k in PER_RANK_KEYS)]
        cells = [[literal(r.rank), *(_value(k, getattr(r, k)) for k in PER_RANK_KEYS)] for r in parsed.ranks]
        out.print()
        out.print(
            table(
                "per rank (the engine uses the smallest KV cache)",
                headers,
                cells,
                right=set(range(1, len(headers))),
            )
        )
    if parsed.startup_complete:
        say(out, "the start completed (the engine finished initialising)")


def _value(key: str, value: object) -> str:
    if value is None:
        return "-"
    if key.endswith("_gib"):
        return f"{value:.2f} GiB"
    if key == "max_concurrency":
        return f"{value:g}x"
    if isinstance(value, int) and key != "tensor_parallel_size":
        return f"{value:,}"
    return literal(value)
