"""The TUI on `--demo busy-node` (8 GPUs, 4 engines) at 1 s: its steady share of one core, whole process
(simulator, fake NVML driver, mock engine servers and scraper included), and its first frame (bench/light.py).

Each run is `bench/tui_cpu.py --json` in a process of its own, byte-compiled, timed from its spawn. The
share, the goal's figure, is the steady one: the whole process after its first refreshes, as it runs for
hours (its cost per refresh split into sample, judge and draw). The share over the whole run, start-up
included, is printed as information only. The first frame is the median of short runs.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from light_common import ROOT, Figure, environment

SCRIPT = str(ROOT / "bench" / "tui_cpu.py")
SHARE_GOAL = 0.02
FIRST_FRAME_GOAL_S = 0.5


def run(*options: str) -> dict:
    """One headless run of the app, its figures as tui_cpu.py measures them."""
    argv = (sys.executable, SCRIPT, "--json", *options, "--since", repr(time.monotonic()))
    out = subprocess.run(argv, capture_output=True, text=True, env=environment(), check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def figures(base_cpu_s: float, quick: bool) -> list[Figure]:  # noqa: ARG001 - shares are their own unit
    long = run("--seconds", "12" if quick else "30")
    share = long["steady_share"]
    split = (
        f"refresh {long['refresh_ms']:.0f} ms = sample {long['sample_ms']:.1f} + judge {long['judge_ms']:.1f}"
        f" + draw {long['draw_ms']:.1f} + rest {long['rest_ms']:.1f}"
    )
    print(f"    TUI per refresh after the first 3: {split}; steady {share:.2%} of one core")
    print(
        f"    TUI over its whole {long['wall_s']:.0f} s run, start-up included: {long['whole_share']:.2%} (information)"
    )
    starts = [run("--first") for _ in range(3 if quick else 7)]
    frame = statistics.median(s["first_frame_s"] for s in starts)
    numbers = statistics.median(s["first_numbers_s"] for s in starts)
    print(f"    TUI first frame {frame:.2f} s, first numbers {numbers:.2f} s (median of {len(starts)}, from spawn)")
    return [
        Figure(
            "TUI on `--demo busy-node`, whole process, 1 s, steady",
            f"{share:.1%} of a core",
            f"<= {SHARE_GOAL:.0%}",
            share <= SHARE_GOAL,
        ),
        Figure(
            "TUI first frame (from spawn)",
            f"{frame:.2f} s",
            f"<= {FIRST_FRAME_GOAL_S:g} s",
            frame <= FIRST_FRAME_GOAL_S,
        ),
    ]
