"""Soak: the TUI (headless) on the busy demo plus one hostile endpoint, at a fast interval, for a bounded
time; it prints the process's RSS, open file descriptors and TCP connections every few seconds, the
samples that reached the screen per second, and the last reading against the first. Flat is the goal.

Run: python3 bench/soak.py [--seconds 60 | --minutes M] [--every 5] [--interval 0.1] [--fault trickle|...]
The hostile endpoint (tests/faults.py) runs in a child process, so its own sockets are not counted.
`--what fleet`: the fleet screen over a real Prometheus restarted halfway, and the exporters it scrapes every
0.5 s (bench/soak_fleet.py): `python3 bench/soak.py --what fleet --minutes 10 --interval 1`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.faults, from a source checkout

import psutil  # noqa: E402

from gpumem_tui.app.app import GpuMemApp  # noqa: E402
from gpumem_tui.catalog import load_catalog  # noqa: E402
from gpumem_tui.demo import load_scenario  # noqa: E402
from gpumem_tui.demo.feed import DemoFeed  # noqa: E402
from gpumem_tui.demo.plan import scenario_plan  # noqa: E402
from gpumem_tui.diagnosis.judge import Judge  # noqa: E402

SCENARIO = "busy-node"


class Counted(GpuMemApp):
    """Counts the samples that reach the screen (the node screen's SampleReady bubbles up once drawn)."""

    samples = 0

    def on_sample_ready(self) -> None:
        self.samples += 1


def hostile(fault: str, ready) -> None:
    """The child process: one hostile endpoint until it is terminated."""
    from tests.faults import FaultServer

    server = FaultServer(metrics=fault, models=fault).start()
    ready.put(server.url)
    while True:
        time.sleep(3600)


def reading(process: psutil.Process, port: int) -> tuple[float, int, int, int]:
    """RSS in MiB, open file descriptors, TCP connections, and those to the hostile endpoint."""
    connections = process.net_connections(kind="tcp")
    to_hostile = sum(1 for c in connections if c.raddr and c.raddr.port == port)
    return process.memory_info().rss / 2**20, process.num_fds(), len(connections), to_hostile


async def soak(args: argparse.Namespace, url: str) -> list[tuple[float, ...]]:
    catalog = load_catalog()
    feed = DemoFeed.running(SCENARIO, endpoints=[url])
    app = Counted(feed, Judge(catalog, scenario_plan(load_scenario(SCENARIO), catalog)), interval_s=args.interval)
    process, port = psutil.Process(), int(url.rsplit(":", 1)[1])
    rows: list[tuple[float, ...]] = []
    print(f"{'t s':>6} {'RSS MiB':>9} {'fds':>5} {'tcp':>5} {'to hostile':>11} {'samples/s':>10}")
    async with app.run_test(headless=True, size=(160, 48)) as pilot:
        start, seen = time.monotonic(), 0
        while (elapsed := time.monotonic() - start) < args.seconds:
            await pilot.pause(min(args.every, args.seconds - elapsed))
            now = time.monotonic() - start
            rate = (app.samples - seen) / max(1e-9, now - (rows[-1][0] if rows else 0.0))
            seen = app.samples
            row = (now, *reading(process, port), rate)
            rows.append(row)
            print(f"{row[0]:6.0f} {row[1]:9.1f} {row[2]:5d} {row[3]:5d} {row[4]:11d} {row[5]:10.1f}", flush=True)
        await pilot.press("q")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--what", choices=["node", "fleet"], default="node", help="the TUI on a node, or the fleet")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--minutes", type=float, help="the same as --seconds, in minutes")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between readings (default 5)")
    parser.add_argument("--interval", type=float, default=0.1, help="the TUI's refresh interval (default 0.1)")
    parser.add_argument("--fault", default="trickle", choices=["trickle", "hang", "huge", "cut", "http_500"])
    args = parser.parse_args()
    if args.minutes is not None:
        args.seconds = args.minutes * 60
    if args.what == "fleet":
        import soak_fleet  # bench/, beside this script

        rows = soak_fleet.run(args)
        print(f"last vs first reading: {soak_fleet.ratios(rows)}" if len(rows) >= 2 else "too short to compare")
        return 0
    import asyncio

    ready = multiprocessing.Queue()
    child = multiprocessing.Process(target=hostile, args=(args.fault, ready), daemon=True)
    child.start()
    try:
        url = ready.get(timeout=30)
        print(f"{SCENARIO} demo + a {args.fault} endpoint at {url}, interval {args.interval:g} s, {args.seconds:g} s")
        rows = asyncio.run(soak(args, url))
    finally:
        child.terminate()
        child.join()
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        ratios = ", ".join(
            f"{name} {last[i] / first[i]:.2f}x" if first[i] else f"{name} {first[i]:g} -> {last[i]:g}"
            for i, name in ((1, "RSS"), (2, "fds"), (3, "tcp"), (4, "to hostile"))
        )
        print(f"last vs first reading: {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
