"""The fleet demo (bench/light.py): `gpumem-tui fleet --demo` from the start of its process to its first node rows
on screen, then to its history line; and `fleet snapshot --demo --history`'s CPU, the simulated run and the
history computed whole, as a ratio to the baseline.

The screen runs headless (Textual's own `run(headless=True)`) in a process of its own, started as a user starts
`gpumem-tui fleet --demo`; it prints a line when a frame with node rows has been painted and one when the history
line is drawn, and this process times the lines as they come. Wall seconds: what a person waits for.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time

from light_common import ROOT, Figure, environment, median_cpu

FIRST_ROWS_GOAL_S = 3.0


def _screen_times() -> tuple[float, float, float]:
    """(first node rows, history drawn, the process's CPU until then) in seconds, from one run."""
    started = time.perf_counter()
    child = subprocess.Popen(
        (sys.executable, __file__, "--screen"), stdout=subprocess.PIPE, text=True, env=environment(), cwd=ROOT
    )
    assert child.stdout is not None
    seen: dict[str, float] = {}
    for line in child.stdout:
        word, _, value = line.strip().partition(" ")
        seen[word] = time.perf_counter() - started
        if word == "cpu":
            seen["cpu"] = float(value)
    child.wait()
    if child.returncode or not {"rows", "history", "cpu"} <= set(seen):
        raise RuntimeError(f"fleet --demo headless: exit {child.returncode}, saw {sorted(seen)}")
    return seen["rows"], seen["history"], seen["cpu"]


def figures(base_cpu_s: float, quick: bool) -> list[Figure]:
    _screen_times()  # the file cache warm
    runs = [_screen_times() for _ in range(3 if quick else 5)]
    rows, history, cpu = (statistics.median(run[k] for run in runs) for k in range(3))
    snapshot = median_cpu(
        (sys.executable, "-m", "gpumem_tui", "fleet", "snapshot", "--demo", "--history", "3600"), 3 if quick else 7
    )
    return [
        Figure("`fleet --demo`, first node rows (wall)", f"{rows:.2f} s", f"<= {FIRST_ROWS_GOAL_S:g} s", rows <= 3.0),
        Figure("`fleet --demo`, history line drawn (wall)", f"{history:.2f} s", "after rows", history >= rows),
        Figure("`fleet --demo` CPU until then, vs baseline", f"{cpu / base_cpu_s:.1f}x ({cpu:.2f} s)", "-", True),
        Figure(
            "`fleet snapshot --demo --history 3600`",
            f"{snapshot / base_cpu_s:.1f}x ({snapshot * 1000:.0f} ms)",
            "-",
            True,
        ),
    ]


def _screen() -> int:
    """In the measured process: `gpumem-tui fleet --demo`, headless, saying when rows and history are drawn."""
    import resource

    from gpumem_tui.app.app import GpuMemApp
    from gpumem_tui.cli import main

    async def watch(pilot) -> None:
        app = pilot.app
        while not (app.screen.id != "_default" and app.screen.query("#fleet-nodes")):
            await pilot.pause(0.005)
        fleet = app.screen
        nodes = fleet.query_one("#fleet-nodes")
        while not nodes.row_count:
            await pilot.pause(0.005)
        painted = asyncio.Event()
        app.call_after_refresh(painted.set)
        await painted.wait()
        print("rows", flush=True)
        while fleet.history is None and fleet.history_failure is None:
            await pilot.pause(0.005)
        await pilot.pause()
        print("history", flush=True)
        used = resource.getrusage(resource.RUSAGE_SELF)
        print(f"cpu {used.ru_utime + used.ru_stime}", flush=True)
        app.exit()

    run = GpuMemApp.run
    GpuMemApp.run = lambda app, **_: run(app, headless=True, size=(120, 40), auto_pilot=watch)  # type: ignore[method-assign]
    return main(["fleet", "--demo"])


if __name__ == "__main__" and sys.argv[1:] == ["--screen"]:
    raise SystemExit(_screen())
