"""The TUI's cost: share of one core while it runs the demo (8 GPUs, 4 engines) at a 1 s interval, and
the time to its first frame.

Run: python3 bench/tui_cpu.py [--seconds 60] [--scenario busy-node]
The process also runs the simulated node and the four mock engine servers, so the share printed is an
upper bound for the TUI itself; it prints the simulator's and servers' own cost measured apart too.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import time

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.catalog import load_catalog
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.judge import Judge


class Timed(MainScreen):
    """Notes when the first sample is drawn."""

    first_frame_s: float | None = None
    started = time.perf_counter()
    steady_from: tuple[float, float] | None = None

    def redraw(self) -> None:
        super().redraw()
        if self.node.sample is not None and Timed.first_frame_s is None:
            Timed.first_frame_s = time.perf_counter() - self.started
            Timed.steady_from = (time.process_time(), time.perf_counter())


class TimedApp(GpuMemApp):
    def first_screen(self) -> Timed:
        assert self.node is not None
        return Timed(self.node, self.glyphs)


async def feed_only(scenario: str, seconds: float) -> float:
    """CPU seconds of the feed alone over the same time at the same interval: simulator, fake NVML driver,
    engine servers (whose threads also wake while idle) and scraper, without the TUI."""
    feed = DemoFeed.running(scenario)
    await feed.sample()
    start, wall = time.process_time(), time.perf_counter()
    while time.perf_counter() - wall < seconds:
        await feed.sample()
        await asyncio.sleep(1.0)
    spent = (time.process_time() - start) / (time.perf_counter() - wall) * seconds
    await feed.aclose()
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--scenario", default="busy-node")
    parser.add_argument("--size", type=int, nargs=2, default=[160, 48], metavar=("COLUMNS", "ROWS"))
    args = parser.parse_args()
    Timed.started = time.perf_counter()
    feed = DemoFeed.running(args.scenario)
    app = TimedApp(feed, Judge(load_catalog()), interval_s=1.0)
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    app.call_later(lambda: app.set_timer(args.seconds, app.exit))
    app.run(headless=True, size=tuple(args.size))
    cpu, wall = time.process_time() - cpu_start, time.perf_counter() - wall_start
    assert Timed.steady_from is not None, "no sample was drawn"
    steady_cpu = time.process_time() - Timed.steady_from[0]
    steady_wall = time.perf_counter() - Timed.steady_from[1]
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    feed_cpu = asyncio.run(feed_only(args.scenario, steady_wall))
    print(f"scenario {args.scenario}: {len(feed.node.gpus)} GPUs, {len(feed.servers)} engines, {wall:.1f} s at 1 s")
    print(f"first frame: {Timed.first_frame_s:.3f} s after start")
    print(f"whole process: {cpu:.2f} CPU s in {wall:.1f} s = {cpu / wall:.2%} of one core; peak RSS {rss_mib:.0f} MiB")
    print(f"of which the simulated node, fake NVML driver, engine servers and scraper: {feed_cpu:.2f} CPU s")
    share = steady_cpu / steady_wall
    print(f"after the first frame: {steady_cpu:.2f} CPU s in {steady_wall:.1f} s = {share:.2%} of one core")
    print(f"TUI alone after the first frame (less the feed): {(steady_cpu - feed_cpu) / steady_wall:.2%} of one core")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
