"""Soak of the fleet and the exporter (bench/soak.py --what fleet): three `gpumem-tui export --demo` nodes,
a real Prometheus scraping them every 0.5 s and restarted (same port, same data) halfway, and the fleet
screen (headless, in this process) refreshing over it. Every few seconds it prints this process's and the
first exporter's RSS, descriptors and threads, and the fleet's reads so far (ok, stale, failed); at the end,
the last reading against the first as ratios. Flat is the goal. Needs `prometheus` on PATH."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.sources.prometheus, from a source checkout

from gpumem_tui.app.app import GpuMemApp  # noqa: E402
from gpumem_tui.app.screens.fleet import Fleet  # noqa: E402
from gpumem_tui.cli.fleet_screen import prometheus_reader  # noqa: E402
from gpumem_tui.sources.prometheus.client import Connection  # noqa: E402
from gpumem_tui.sources.prometheus.queries import Queries  # noqa: E402
from gpumem_tui.sources.prometheus.records import FleetSample  # noqa: E402
from tests.sources.prometheus.server import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NODES = {"node-1": "noisy-neighbour", "node-2": "kv-pressure", "node-3": "busy-node"}


@contextmanager
def exporter(node: str, scenario: str):
    """`gpumem-tui export --demo SCENARIO` as NODE_NAME=node; yields (its host:port, its process)."""
    env = {**os.environ, "NODE_NAME": node, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "gpumem_tui", "export", "--demo", scenario, "--listen", "127.0.0.1:0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        found = re.search(r"http://(\S+)/metrics", process.stdout.readline() if process.stdout else "")
        assert found, "the exporter did not start"
        yield found.group(1), psutil.Process(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)


def prometheus(port: int, config: Path, data: Path) -> subprocess.Popen:
    command = [
        "prometheus",
        f"--config.file={config}",
        f"--storage.tsdb.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=error",
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def reading(process: psutil.Process) -> tuple[float, int, int]:
    """RSS in MiB, open descriptors, threads."""
    return process.memory_info().rss / 2**20, process.num_fds(), process.num_threads()


async def soak(args: argparse.Namespace, url: str, server: Server, exported: psutil.Process) -> list[tuple[float, ...]]:
    reads: Counter[str] = Counter()
    read = prometheus_reader(Connection(url), Queries(look=0.1), None, 10.0)

    async def counted() -> FleetSample:
        try:
            sample = await read()
        except Exception:
            reads["failed"] += 1
            raise
        reads[sample.state] += 1
        return sample

    app = GpuMemApp.of_fleet(Fleet(counted, url, args.interval))
    me, rows = psutil.Process(), []
    down_at, up_at = args.seconds / 2, args.seconds / 2 + max(3.0, 3 * args.interval)
    print(f"{'t s':>6} {'RSS MiB':>8} {'fds':>4} {'thr':>4} | {'exporter RSS':>12} {'fds':>4} {'thr':>4} | reads")
    async with app.run_test(headless=True, size=(160, 48)) as pilot:
        start = time.monotonic()
        while (elapsed := time.monotonic() - start) < args.seconds:
            await pilot.pause(min(args.every, args.seconds - elapsed))
            elapsed = time.monotonic() - start
            server.follow(elapsed >= down_at and elapsed < up_at)
            row = (elapsed, *reading(me), *reading(exported))
            rows.append(row)
            said = ", ".join(f"{k} {v}" for k, v in sorted(reads.items()))
            fleet, ours = f"{row[1]:8.1f} {row[2]:4d} {row[3]:4d}", f"{row[4]:12.1f} {row[5]:4d} {row[6]:4d}"
            print(f"{row[0]:6.0f} {fleet} | {ours} | {said}{server.said()}", flush=True)
        await pilot.press("q")
    return rows


class Server:
    """Prometheus on one port and data folder, stopped and started again by `follow`."""

    def __init__(self, port: int, config: Path, data: Path):
        self.port, self.config, self.data, self.restarts = port, config, data, 0
        self.process: subprocess.Popen | None = prometheus(port, config, data)

    def follow(self, down: bool) -> None:
        if down and self.process is not None:
            self.stop()
        elif not down and self.process is None:
            self.process, self.restarts = prometheus(self.port, self.config, self.data), self.restarts + 1

    def said(self) -> str:
        return " (Prometheus down)" if self.process is None else ""

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


def run(args: argparse.Namespace) -> list[tuple[float, ...]]:
    import asyncio

    from tests.sources.prometheus.server import scrape_config

    with ExitStack() as stack, tempfile.TemporaryDirectory() as folder:
        started = [stack.enter_context(exporter(node, scenario)) for node, scenario in NODES.items()]
        config = scrape_config(Path(folder), [address for address, _ in started])
        config.write_text(config.read_text().replace("scrape_interval: 1s", "scrape_interval: 500ms"))
        server = Server(free_port(), config, Path(folder) / "data")
        try:
            time.sleep(3)  # a few scrapes in before the first read
            print(f"3 exporters scraped every 0.5 s by Prometheus at 127.0.0.1:{server.port}, {args.seconds:g} s")
            return asyncio.run(soak(args, f"http://127.0.0.1:{server.port}", server, started[0][1]))
        finally:
            server.stop()


def ratios(rows: list[tuple[float, ...]]) -> str:
    first, last = rows[0], rows[-1]
    names = ((1, "fleet RSS"), (2, "fleet fds"), (3, "fleet threads"), (4, "exporter RSS"), (5, "exporter fds"))
    return ", ".join(f"{name} {last[i] / first[i]:.2f}x" for i, name in (*names, (6, "exporter threads")))
