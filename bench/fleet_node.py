"""One node's drill-down at fleet scale: the read behind `enter` on a node, `gpumem-tui --prometheus URL --node
NAME` and `check --prometheus URL --node NAME` (sources/prometheus/node_feed.read_node), and the forensics read
behind `f` on it and `check -v` (node_history.read_node_history over the hour, then `investigate` walking it),
timed against a real Prometheus over the simulated fleet of bench/fleet.py (N nodes of 8 H100s and one vLLM
engine, an hour at 30 s).

Per read it prints wall time, client CPU (time.process_time), bytes received and queries made, for nodes spread
over the fleet; then the medians. Nothing here is asserted: it is measured.

Run: python3 bench/fleet_node.py [--nodes 100] [--reads 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.sources.prometheus.server, from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/fleet.py

from fleet import HOUR_S, Counting, build_fleet  # noqa: E402

from gpumem_tui.catalog import load_catalog  # noqa: E402
from gpumem_tui.diagnosis.fleet.stale import stale  # noqa: E402
from gpumem_tui.diagnosis.forensics import investigate  # noqa: E402
from gpumem_tui.sources.prometheus import client as client_module  # noqa: E402
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient  # noqa: E402
from gpumem_tui.sources.prometheus.node_feed import read_node  # noqa: E402
from gpumem_tui.sources.prometheus.node_history import read_node_history  # noqa: E402
from gpumem_tui.sources.prometheus.node_queries import NodeQueries  # noqa: E402
from gpumem_tui.sources.prometheus.node_sample import node_sample  # noqa: E402
from tests.sources.prometheus.server import T0, require_prometheus, running  # noqa: E402


async def drill(url: str, node: str, at: float, counting: Counting) -> tuple[float, float, int, int, int]:
    """(wall s, client CPU s, bytes, queries, GPUs) of one node's read over a fresh connection pool."""
    counting.requests = counting.bytes = 0
    wall, cpu = time.perf_counter(), time.process_time()
    async with PrometheusClient(Connection(url)) as client:
        sample = node_sample(await read_node(client, NodeQueries(node), at, stale), node)
    return time.perf_counter() - wall, time.process_time() - cpu, counting.bytes, counting.requests, len(sample.gpus)


async def forensics(url: str, node: str, at: float, counting: Counting) -> tuple[float, float, int, int, int, float]:
    """(wall s, client CPU s, bytes, queries, samples) of one node's hour read with range queries, and the client
    CPU s of walking it (`investigate`, as `f` and `check -v` do)."""
    counting.requests = counting.bytes = 0
    wall, cpu = time.perf_counter(), time.process_time()
    async with PrometheusClient(Connection(url)) as client:
        history = await read_node_history(client, NodeQueries(node), at, HOUR_S, stale)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    walk = time.process_time()
    investigate(history, load_catalog())
    samples = len(history.samples)
    return wall, cpu, counting.bytes, counting.requests, samples, time.process_time() - walk


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100, help="nodes of 8 GPUs and one engine (default 100)")
    parser.add_argument("--reads", type=int, default=10, help="node reads to time (default 10)")
    parser.add_argument(
        "--keep", metavar="DIR", help="build the fleet's blocks in DIR and keep them (bench/fleet.py's --keep)"
    )
    args = parser.parse_args()
    if args.nodes < 1 or args.reads < 1:
        print("fleet node bench: --nodes and --reads at least 1", file=sys.stderr)
        return 2
    try:
        require_prometheus()
    except BaseException as exc:  # noqa: BLE001 - pytest's skip outside pytest: say why in one line
        print(f"fleet node bench: {exc}", file=sys.stderr)
        return 3
    with tempfile.TemporaryDirectory(prefix="gpumem-fleet-node-bench-") as tmp:
        data = build_fleet(args.nodes, 0.9, Path(args.keep) if args.keep else Path(tmp))
        counting = Counting()
        client_module.stream_capped = counting  # type: ignore[assignment]  # the bench's meter on every request
        at = T0 + HOUR_S
        names = [f"node-{k * args.nodes // args.reads:04d}" for k in range(args.reads)]
        with running(data) as url:
            asyncio.run(drill(url, names[0], at, counting))  # the server's first answer warms its caches
            runs = []
            for name in names:
                run = asyncio.run(drill(url, name, at, counting))
                runs.append(run)
                wall, cpu, received, queries, gpus = run
                print(
                    f"{name}: {wall * 1000:.1f} ms wall, {cpu * 1000:.1f} ms client CPU, {received:,} bytes, "
                    f"{queries} queries, {gpus} GPUs"
                )
            pasts = []
            for name in names:
                past = asyncio.run(forensics(url, name, at, counting))
                pasts.append(past)
                wall, cpu, received, queries, samples, walk = past
                print(
                    f"{name} forensics, 1 h: {wall * 1000:.1f} ms wall, {cpu * 1000:.1f} ms client CPU, "
                    f"{received:,} bytes, {queries} range queries, {samples} samples; walk {walk * 1000:.1f} ms CPU"
                )
    wall, cpu, received = (statistics.median(r[i] for r in runs) for i in range(3))
    print(
        f"{args.nodes:,} nodes, median of {len(runs)} node reads: {wall * 1000:.1f} ms wall, "
        f"{cpu * 1000:.1f} ms client CPU, {received:,.0f} bytes"
    )
    wall, cpu, received, walk = (statistics.median(r[i] for r in pasts) for i in (0, 1, 2, 5))
    print(
        f"{args.nodes:,} nodes, median of {len(pasts)} forensics reads of 1 h: {wall * 1000:.1f} ms wall, "
        f"{cpu * 1000:.1f} ms client CPU, {received:,.0f} bytes; the walk {walk * 1000:.1f} ms CPU"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
