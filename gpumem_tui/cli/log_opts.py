"""`gpumem-tui log`: the options; the action (log_cmd.py) is imported when it runs."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.lazy import action
from gpumem_tui.cli.planargs import count, one_line, vllm_version
from gpumem_tui.planner.sglang.versions import known_version as sglang_known


def options(parser: argparse.ArgumentParser) -> None:
    parser.description = "Read the memory numbers from a vLLM or SGLang startup log; a failed start is said first."
    parser.epilog = (
        "exit status: 0 the log shows no failure, 1 it shows the start failed (out of memory, no room for "
        "the KV cache; also with --json and --compare), 2 bad input (a file that cannot be read, no startup lines)"
    )
    parser.add_argument("file", metavar="FILE", help="a startup log (prefixes, colours and TP workers are fine)")
    parser.add_argument("--json", action="store_true", help="print JSON (docs/log-json.md)")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="predict the log from the settings it states and print predicted vs actual",
    )
    parser.add_argument("--gpu", metavar="KEY", help="with --compare: the GPU (default: the total the log states)")
    parser.add_argument("--model", metavar="ID", help="with --compare: the model, when the log does not name it")
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="with --compare: the model's config.json (or directory, or cached HF id), for a "
        "model the catalog does not hold",
    )
    parser.add_argument(
        "--max-model-len",
        type=count(1),
        metavar="TOKENS",
        help="with --compare: when the log does not state it (default: the model's own)",
    )
    parser.add_argument(
        "--vllm-version", type=vllm_version, metavar="X.Y.Z", help="with --compare: when the log does not say"
    )
    parser.add_argument(
        "--sglang-version",
        type=one_line(sglang_known),
        metavar="X.Y.Z",
        help="with --compare on an SGLang log: its release (default: the one its wording points to)",
    )
    parser.add_argument(
        "--tp", type=count(1, 1024), metavar="N", help="with --compare on an SGLang log: when it does not state tp_size"
    )
    parser.add_argument(
        "--mem-fraction-static",
        type=one_line(_fraction),
        metavar="F",
        help="with --compare on an SGLang log: when it does not state mem_fraction_static",
    )
    parser.add_argument("--catalog", action="append", default=[], metavar="DIR", help="extra catalog directory")
    parser.set_defaults(run=action("log_cmd:run"))


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise ValueError(f"{text!r} must be more than 0 and less than 1")
    return value
