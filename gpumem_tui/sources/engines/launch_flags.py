"""The memory-deciding flags of an engine's command line (`vllm serve MODEL --flag value`), read literally."""

from __future__ import annotations

from collections.abc import Sequence

FLAGS = (
    "--model",
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--quantization",
    "--kv-cache-dtype",
    "--max-model-len",
    "--gpu-memory-utilization",
    "--block-size",
    "--dtype",
    "--limit-mm-per-prompt",
)
SWITCHES = ("--language-model-only",)
"""Flags that take no value: present means on."""
DOTTED = ("--limit-mm-per-prompt.",)
"""vLLM's parser also takes a JSON flag one key at a time: `--limit-mm-per-prompt.image 0`."""
SHORT = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-q": "--quantization"}


def launch_flags(argv: Sequence[str] | None) -> dict[str, str]:
    """`{"--quantization": "fp8", "model": "org/name", ...}`; the last value of a flag wins, as with argparse."""
    found: dict[str, str] = {}
    args = list(argv or [])
    for i, arg in enumerate(args):
        name, _, inline = arg.partition("=")
        name = SHORT.get(name, name)
        if name in SWITCHES:
            found[name] = "true"
            continue
        if name not in FLAGS and not name.startswith(DOTTED):
            continue
        if inline:
            found[name] = inline
        elif i + 1 < len(args) and not args[i + 1].startswith("-"):
            found[name] = args[i + 1]
    served = _served_model(args)
    if served is not None:
        found["model"] = served
    elif "--model" in found:
        found["model"] = found["--model"]
    return found


def _served_model(args: list[str]) -> str | None:
    """The positional model of `vllm serve MODEL`."""
    for i, arg in enumerate(args[:-1]):
        if arg == "serve" and not args[i + 1].startswith("-"):
            return args[i + 1]
    return None


def number(flags: dict[str, str], name: str, kind: type = int) -> int | float | None:
    """A numeric flag, or None when absent or not a number."""
    try:
        return kind(flags[name])
    except (KeyError, ValueError):
        return None
