"""One-shot commands: CPU of the whole process as a ratio to the baseline (bench/light.py)."""

from __future__ import annotations

import sys

from light_common import Figure, median_cpu

COMMANDS = (
    ("plan --model llama-3.1-8b --gpu h100", 2.0),
    ("check --demo noisy-neighbour", 3.0),
    ("fleet check --demo", 4.0),
)


def figures(base_cpu_s: float, quick: bool) -> list[Figure]:
    out = []
    for command, goal in COMMANDS:
        cpu = median_cpu((sys.executable, "-m", "gpumem_tui", *command.split()), 3 if quick else 7)
        ratio = cpu / base_cpu_s
        out.append(Figure(f"`{command}`", f"{ratio:.1f}x ({cpu * 1000:.0f} ms)", f"<= {goal:g}x", ratio <= goal))
    return out
