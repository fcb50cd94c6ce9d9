"""An engine's predicted startup, as `plan` and `fit` print it for vLLM and SGLang alike."""

from __future__ import annotations

from gpumem_tui.cli.output import say
from gpumem_tui.planner.sglang.records import SglangPrediction
from gpumem_tui.planner.vllm import EnginePrediction


def print_outlook(out, heading: str, p: EnginePrediction | SglangPrediction) -> None:
    """An engine's predicted log lines, then what will fail, what to watch and what was assumed."""
    say(out, heading, style="bold")
    for line in p.log_lines:
        say(out, f"  {line}")
    for line in p.failures:
        say(out, f"  x will fail: {line}", style="bold red")
    for line in p.warnings:
        say(out, f"  ! {line}", style="yellow")
    for line in p.assumed:
        say(out, f"  ~ {line}")
