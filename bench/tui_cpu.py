"""The TUI's cost: share of one core while it runs the demo (8 GPUs, 4 engines) at a 1 s interval, the time to
its first frame, and one refresh's cost split into sample, judge and draw.

Run: python3 bench/tui_cpu.py [--seconds 30] [--scenario busy-node] [--json]
The app is built as `gpumem-tui --demo SCENARIO` builds it (the scenario's plan, the CLI's catalog), with the
garbage collector as `gpumem-tui` has it (off while importing, the imports frozen after: cli.program), and runs
headless. The process also runs the simulated node, the fake NVML driver, the mock engine servers and the
scraper: "whole process" counts all of it. Per refresh: `sample` is the feed's CPU per sample measured alone
afterwards (simulator, driver, servers, scraper, parser), `judge` the refresh worker's thread CPU in
`Node.judge_sample`, `draw` the UI thread's CPU handing the widgets their content and Textual's screen
update (layout and render), and `rest` what the process spent beyond those three (Textual's loop, timers).
Times from `--since` (a CLOCK_MONOTONIC reading taken by whoever spawned this process, bench/light_tui.py)
or else from this script's first line.
"""

from __future__ import annotations

import time

STARTED = time.monotonic()

import gc  # noqa: E402 - the clock above starts before every import

gc.disable()  # as `gpumem-tui` starts (cli.program): no collection while importing, the imports frozen after

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402

from gpumem_tui.app.app import GpuMemApp  # noqa: E402
from gpumem_tui.app.screens.main import MainScreen  # noqa: E402
from gpumem_tui.cli import build_parser  # noqa: E402
from gpumem_tui.cli.tui_cmd import build_app  # noqa: E402
from gpumem_tui.demo.feed import DemoFeed  # noqa: E402
from gpumem_tui.sources.prometheus.gc_pause import freeze_imports  # noqa: E402

freeze_imports()  # as cli.program's lazy import does: heap.settle then freezes what lives after the first frame
gc.enable()

SETTLE = 3
"""Refreshes left out of the steady window: the first ones (the first judgement, imports done late)."""


@dataclass
class Clocks:
    """What the hooks note as the app runs."""

    first_frame_s: float | None = None
    """The first frame written to the terminal (waiting for the first sample)."""
    first_numbers_s: float | None = None
    """The first frame with a sample's numbers."""
    refreshes: int = 0
    steady_from: tuple[float, float] | None = None
    """(process CPU, wall) at the start of the steady window."""
    steady_refreshes: int = 0
    judge_cpu: float = 0.0
    draw_cpu: float = 0.0


CLOCKS = Clocks()


def _steady() -> bool:
    return CLOCKS.steady_from is not None


def hook(app: GpuMemApp, since: float, first_only: bool) -> None:
    """Note the first frames, the judge's thread CPU and the UI thread's drawing CPU: on this app only,
    through methods a subclass could override. `first_only`: the app ends once the numbers are drawn."""
    node = app.node
    assert node is not None
    judge_sample, display = node.judge_sample, app._display

    def judged(sample):
        start = time.thread_time()
        try:
            return judge_sample(sample)
        finally:
            if _steady():
                CLOCKS.judge_cpu += time.thread_time() - start

    def displayed(screen, renderable):
        display(screen, renderable)
        now = time.monotonic() - since
        if CLOCKS.first_frame_s is None:
            CLOCKS.first_frame_s = now
        if CLOCKS.first_numbers_s is None and node.sample is not None:
            CLOCKS.first_numbers_s = now
            if first_only:
                app.exit()

    node.judge_sample = judged  # type: ignore[method-assign]
    app._display = displayed  # type: ignore[method-assign]


def _timed_draw(method):
    def timed(self, *args):
        start = time.thread_time()
        try:
            return method(self, *args)
        finally:
            if _steady():
                CLOCKS.draw_cpu += time.thread_time() - start

    return timed


def _counted(method):
    def counted(self, message):
        CLOCKS.refreshes += 1
        if CLOCKS.refreshes == SETTLE + 1:
            CLOCKS.steady_from = (time.process_time(), time.perf_counter())
        if _steady():
            CLOCKS.steady_refreshes += 1
        return method(self, message)

    return counted


def instrument() -> None:
    """The node screen's redraw of a sample and the screen's update timer (layout, render) are timed; each
    sample handed to the screen is counted."""
    MainScreen.on_sample_ready = _timed_draw(_counted(MainScreen.on_sample_ready))  # type: ignore[method-assign]
    MainScreen._on_timer_update = _timed_draw(MainScreen._on_timer_update)  # type: ignore[method-assign]


async def feed_only(scenario: str, samples: int) -> float:
    """CPU seconds per sample of the feed alone at the same interval: simulator, fake NVML driver, engine
    servers and scraper, without the TUI."""
    feed = DemoFeed.running(scenario)
    for _ in range(SETTLE):
        await feed.sample()
        await asyncio.sleep(1.0)
    start = time.process_time()
    for _ in range(samples):
        await feed.sample()
        await asyncio.sleep(1.0)
    spent = time.process_time() - start
    await feed.aclose()
    return spent / samples


def first_frames(scenario: str, size: tuple[int, int], since: float) -> dict:
    """Only the first frames: the app ends once it has drawn the first sample's numbers."""
    app = build_app(build_parser().parse_args(["--demo", scenario, "--interval", "1"]))
    hook(app, since, first_only=True)
    app.run(headless=True, size=size)
    return {"first_frame_s": CLOCKS.first_frame_s, "first_numbers_s": CLOCKS.first_numbers_s}


def measure(scenario: str, seconds: float, size: tuple[int, int], since: float) -> dict:
    """Every figure of one run, as a dict (`--json` prints it)."""
    args = build_parser().parse_args(["--demo", scenario, "--interval", "1"])
    instrument()
    app = build_app(args)
    hook(app, since, first_only=False)
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    app.call_later(lambda: app.set_timer(seconds, app.exit))
    app.run(headless=True, size=size)
    cpu, wall = time.process_time() - cpu_start, time.perf_counter() - wall_start
    assert CLOCKS.steady_from is not None and CLOCKS.steady_refreshes, "too few samples were drawn"
    steady_cpu = time.process_time() - CLOCKS.steady_from[0]
    steady_wall = time.perf_counter() - CLOCKS.steady_from[1]
    n = CLOCKS.steady_refreshes
    sample_cpu = asyncio.run(feed_only(scenario, n))
    feed = app.node.feed if app.node else None
    ms = 1000 / n
    return {
        "scenario": scenario,
        "gpus": len(feed.node.gpus) if isinstance(feed, DemoFeed) else 0,
        "engines": len(feed.servers) if isinstance(feed, DemoFeed) else 0,
        "first_frame_s": CLOCKS.first_frame_s,
        "first_numbers_s": CLOCKS.first_numbers_s,
        "whole_share": cpu / wall,
        "wall_s": wall,
        "steady_share": steady_cpu / steady_wall,
        "steady_s": steady_wall,
        "refreshes": n,
        "refresh_ms": steady_cpu * ms,
        "sample_ms": sample_cpu * 1000,
        "judge_ms": CLOCKS.judge_cpu * ms,
        "draw_ms": CLOCKS.draw_cpu * ms,
        "rest_ms": (steady_cpu - sample_cpu * n - CLOCKS.judge_cpu - CLOCKS.draw_cpu) * ms,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def say(run: dict) -> None:
    print(f"scenario {run['scenario']}: {run['gpus']} GPUs, {run['engines']} engines, {run['wall_s']:.1f} s at 1 s")
    print(f"first frame {run['first_frame_s']:.3f} s, first numbers {run['first_numbers_s']:.3f} s after start")
    print(f"whole process: {run['whole_share']:.2%} of one core; peak RSS {run['peak_rss_mib']:.0f} MiB")
    print(f"after {SETTLE} refreshes: {run['steady_share']:.2%} of one core over {run['steady_s']:.1f} s")
    print(
        f"per refresh: {run['refresh_ms']:.1f} ms CPU = sample {run['sample_ms']:.1f} + judge {run['judge_ms']:.1f}"
        f" + draw {run['draw_ms']:.1f} + rest {run['rest_ms']:.1f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--scenario", default="busy-node")
    parser.add_argument("--size", type=int, nargs=2, default=[160, 48], metavar=("COLUMNS", "ROWS"))
    parser.add_argument("--since", type=float, default=STARTED, help="CLOCK_MONOTONIC at the process's spawn")
    parser.add_argument("--first", action="store_true", help="only the first frames: stop at the first numbers")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    size = (args.size[0], args.size[1])
    if args.first:
        run = first_frames(args.scenario, size, args.since)
        print(
            json.dumps(run)
            if args.json
            else f"first frame {run['first_frame_s']:.3f} s, numbers {run['first_numbers_s']:.3f} s"
        )
        return 0
    run = measure(args.scenario, args.seconds, size, args.since)
    if args.json:
        json.dump(run, sys.stdout)
        print()
    else:
        say(run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
