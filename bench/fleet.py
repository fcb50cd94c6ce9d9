"""Fleet refresh cost at scale: a real Prometheus over a simulated fleet of N nodes (8 H100s and one vLLM
engine over all eight each, an hour of history at 30 s), and the fleet reads timed against it: the overview
(`fleet check` and the fleet screen, refresh after refresh through one FleetReader) and the full read
(`fleet snapshot`), then the fleet screen's first frame.

The node is the project's own simulator (gpumem_tui/demo/fleet_series.py) running a scenario written here:
Llama 3.1 70B BF16, tensor parallel 8, gpu_memory_utilization 0.9. One node's series are generated once and
copied per node with its own name, UUIDs, pods and addresses, then backfilled with
`promtool tsdb create-blocks-from openmetrics` in a temporary folder and served by `prometheus` on a free
loopback port (the recipe of tests/sources/prometheus/server.py).

The refreshes read one moment each, the fleet screen's interval apart (15 s), ending at the history's end: the
engines' series move with the simulated traffic, the recording rules' once per evaluation (30 s), as a screen
left open sees them. Per refresh it prints: wall time, client CPU (time.process_time), bytes received,
queries made, and the process's RSS; then the medians and per-node costs; then the time from starting the
fleet screen (headless, Textual's run_test) to its first frame with the fleet drawn (a first look, without the
costly slow facts), to the whole picture, and to every row in. Nothing here is asserted: it is measured.

Run: python3 bench/fleet.py [--nodes 100] [--refreshes 5] [--read overview|screen|full|all] [--utilization 0.9]
                            [--rules] [--keep DIR] [--minutes 60] [--query-timeout SECONDS]
     (--nodes 1000: about 950 MB of OpenMetrics, promtool ~30 s and ~1.2 GB RSS, a few minutes in all;
     --nodes 10000 --minutes 10: 1.9 GB, promtool 80 s and ~2.7 GB RSS; --keep DIR keeps the blocks for the
     next run)

Beside each read, the server's own time on it: its query engine's time summed over the read's queries and its
process CPU, from Prometheus's /metrics (server_s)."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.sources.prometheus.server, from a checkout

import psutil  # noqa: E402

from gpumem_tui.app.app import GpuMemApp  # noqa: E402
from gpumem_tui.app.screens.fleet import Fleet  # noqa: E402
from gpumem_tui.catalog import load_catalog  # noqa: E402
from gpumem_tui.cli.fleet_opts import INTERVAL_S  # noqa: E402
from gpumem_tui.cli.fleet_screen import HISTORY_S, prometheus_history, prometheus_reader  # noqa: E402
from gpumem_tui.demo.fleet_series import FleetNodeSpec, fleet_series  # noqa: E402
from gpumem_tui.diagnosis.findings import Thresholds  # noqa: E402
from gpumem_tui.diagnosis.fleet.judge import judge_fleet  # noqa: E402
from gpumem_tui.diagnosis.fleet.plans import PlansKept, plan_fleet  # noqa: E402
from gpumem_tui.diagnosis.fleet.reading import FleetRules  # noqa: E402
from gpumem_tui.diagnosis.fleet.scale import rules_advice  # noqa: E402
from gpumem_tui.sources.prometheus import client as client_module  # noqa: E402
from gpumem_tui.sources.prometheus.client import QUERY_TIMEOUT_S, Connection, PrometheusClient  # noqa: E402
from gpumem_tui.sources.prometheus.queries import Queries  # noqa: E402
from gpumem_tui.sources.prometheus.reader import FleetReader  # noqa: E402
from gpumem_tui.sources.prometheus.records import FleetSample  # noqa: E402
from gpumem_tui.sources.prometheus.rules import rule_group  # noqa: E402
from tests.sources.prometheus.server import SERVED, T0, backfill_rules, changes_group, require_prometheus, running  # noqa: E402

HOUR_S = 3600
RULES_S = 120
"""With --rules: how long before the reads' moment the rules' series are backfilled (a few evaluations): the
timed refreshes read at the screen's pace (INTERVAL_S apart) up to that moment, so 8 at most see them all."""
STEP_S = 30
"""dcgm-exporter's default collection interval."""
RULES_EVERY_S = 30
"""The rules' evaluation interval, as `fleet rules` writes it."""
NODE = """description = "bench: one vLLM engine over eight H100s"
hostname = "bench-node"
duration_s = 3600
start_s = 95
story_s = 105

[[gpus]]
model = "h100"
count = 8

[[engines]]
id = "llama-70b"
model = "meta-llama/Llama-3.1-70B"
format = "bf16"
gpus = [0, 1, 2, 3, 4, 5, 6, 7]
gpu_memory_utilization = {utilization}
max_model_len = 16384
tokens_per_request = 3000
request_s = 30
load_s = 60
activation_gib = 1.5

[[events]]
at_s = 72
kind = "traffic"
engine = "llama-70b"
rate = 4.0
ramp_s = 20
"""
TEMPLATE_NAME = "nodeTEMPLATE"


def copies(template: str, nodes: int) -> Iterator[tuple[str, Iterator[str]]]:
    """Each family's `# TYPE` line and every node's lines of it: the template node renamed per node (name,
    UUIDs, exporter pod, addresses), so each family is declared once as OpenMetrics requires."""
    families: dict[str, list[str]] = {}
    current: list[str] = []
    for line in template.splitlines():
        if line.startswith("# TYPE "):
            current = families.setdefault(line, [])
        elif line and not line.startswith("#"):
            current.append(line)
    for header, lines in families.items():
        body = "\n".join(lines)
        yield (
            header,
            (
                body.replace(TEMPLATE_NAME, f"node-{n:04d}")
                .replace("GPU-00000000-", f"GPU-{n:08x}-")
                .replace("exporter-00x7k", f"exporter-{n:05d}x7k")
                .replace("10.1.0.", f"10.1.{n}.")
                .replace("10.2.0.", f"10.2.{n}.")
                for n in range(nodes)
            ),
        )


def write_fleet(nodes: int, where: Path, utilization: float = 0.9, history_s: int = HOUR_S) -> Path:
    """The fleet's OpenMetrics file, written a family at a time (1,000 nodes over an hour are about 950 MB)."""
    scenario = where / "bench-node.toml"
    scenario.write_text(NODE.replace("{utilization}", repr(utilization)), encoding="utf-8")
    template = fleet_series([FleetNodeSpec(TEMPLATE_NAME, str(scenario))], history_s, STEP_S)
    path = where / "fleet.om"
    with path.open("w", encoding="utf-8") as out:
        for header, bodies in copies(template, nodes):
            out.write(header + "\n")
            for body in bodies:
                out.write(body + "\n")
        out.write("# EOF\n")
    return path


class Counting:
    """Counts the requests made and the bytes received through the client's reader."""

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        self._read = client_module.stream_capped

    async def __call__(self, client, method, url, max_bytes, sink_of, **kwargs):
        def counted(status):
            sink = sink_of(status)

            def take(piece):
                self.bytes += len(piece)
                sink(piece)

            return take

        status = await self._read(client, method, url, max_bytes, counted, **kwargs)
        self.requests += 1
        return status


def server_s(url: str) -> tuple[float, float]:
    """(query time, CPU) Prometheus has spent so far, in seconds, from its own /metrics: the sum over every
    query of `prometheus_engine_query_duration_seconds` (queue, prepare, inner eval and result sort: the timings
    the query API's `stats=all` returns), and its process's `process_cpu_seconds_total` (10 ms steps). Read
    before and after a refresh, the difference is the server's on that refresh. Each query's time is its own
    wall time in the server: queries that run at once on shared cores each count the time they wait."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:
        lines = response.read().decode().splitlines()
    queries = sum(
        float(s.rsplit(" ", 1)[1]) for s in lines if s.startswith("prometheus_engine_query_duration_seconds_sum")
    )
    cpu = sum(float(s.rsplit(" ", 1)[1]) for s in lines if s.startswith("process_cpu_seconds_total"))
    return queries, cpu


async def refresh(
    url: str,
    at: float,
    reader: FleetReader,
    counting: Counting,
    timeout_s: float = QUERY_TIMEOUT_S,
    plan: Callable[[FleetSample], FleetSample] | None = None,
) -> tuple[float, float, int, int, int, str, tuple[float, float], float]:
    """(wall s, client CPU s, bytes, queries, GPUs read one by one, where the node figures came from, the
    server's query time and CPU s, the plan's and judge's CPU s) of one fleet read over a fresh pool, then the
    plans of its engines (`plan`: as the fleet screen plans each sample) and the judge of its sample (the fleet
    screen's worker does all three at each refresh: the plan's and judge's time is given apart, and the wall
    and CPU are the read's)."""
    counting.requests = counting.bytes = 0
    server = server_s(url)
    wall, cpu = time.perf_counter(), time.process_time()
    async with PrometheusClient(Connection(url), query_timeout_s=timeout_s) as client:
        sample = await reader.read(client, at)
    spent = time.perf_counter() - wall, time.process_time() - cpu
    after = server_s(url)
    server = (after[0] - server[0], after[1] - server[1])
    judged = time.process_time()
    judge_fleet(sample if plan is None else plan(sample), THRESHOLDS)
    judge = time.process_time() - judged
    return *spent, counting.bytes, counting.requests, len(sample.gpus), sample.node_figures_from, server, judge


def planner() -> Callable[[FleetSample], FleetSample]:
    """Each sample's engines planned from the catalog, keeping what the last planning made, as `gpumem-tui
    fleet` plans the samples of its screen (cli/fleet_cmd.planner)."""
    kept, catalog = PlansKept(), load_catalog()
    return lambda sample: plan_fleet(sample, catalog, None, kept)


THRESHOLDS = Thresholds()
"""The judge's: one object for the whole run, as the fleet screen holds its own."""
READS = {
    "overview": Queries(look=Thresholds().headroom_warning_fraction),
    "screen": Queries(look=Thresholds().headroom_warning_fraction, over=Thresholds().kv_saturated_fraction),
    "full": Queries(),
}
"""`fleet check`'s read (per-node aggregates; GPUs one by one only on nodes that need a look; the slow facts read
with the first refresh and kept by the reader), the fleet screen's (the same, its engines' gauges by exception
between its reads of the pools: cli/fleet_screen.py) and `fleet snapshot`'s (every GPU)."""


def _summary(name: str, runs: list[tuple[float, float, int, int, int, float, float, float]], nodes: int) -> None:
    wall, cpu, received = (statistics.median(r[i] for r in runs) for i in range(3))
    server, server_cpu, judge = (statistics.median(r[i] for r in runs) for i in (5, 6, 7))
    print(
        f"{name} median: {wall * 1000:,.0f} ms wall, {cpu * 1000:,.0f} ms client CPU, {server * 1000:,.0f} ms "
        f"server query time ({server_cpu * 1000:,.0f} ms server CPU), {received / 2**20:,.2f} MiB, then the "
        f"{'judge' if name == 'full' else 'plans and judge'} {judge * 1000:,.0f} ms; "
        f"per node {wall / nodes * 1e6:,.0f} us wall, {cpu / nodes * 1e6:,.0f} us CPU, {received / nodes:,.0f} "
        f"bytes; peak RSS {max(r[4] for r in runs) / 2**20:,.0f} MiB"
    )
    print(  # timeit's rule: the fastest is what the code costs, slower ones are the machine's other work on top
        f"{name} fastest: {min(r[0] for r in runs) * 1000:,.0f} ms wall, {min(r[1] for r in runs) * 1000:,.0f} ms "
        "client CPU (this machine's CPU time per refresh moves by half from minute to minute with its other load)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100, help="nodes of 8 GPUs and one engine (default 100)")
    parser.add_argument("--refreshes", type=int, default=5, help="fleet reads to time, per read (default 5)")
    parser.add_argument("--read", choices=[*READS, "all"], default="all", help="which read to time")
    parser.add_argument(
        "--utilization",
        type=float,
        default=0.9,
        help="the engines' gpu_memory_utilization (default 0.9, vLLM's: about 8.7 %% of each H100 stays free, "
        "under the 10 %% headroom fraction, so every GPU is read one by one as 'as planned')",
    )
    parser.add_argument(
        "--rules",
        action="store_true",
        help="with the series of `gpumem-tui fleet rules` backfilled beside the fleet (the overview reads them)",
    )
    parser.add_argument(
        "--query-timeout",
        type=float,
        default=QUERY_TIMEOUT_S,
        metavar="SECONDS",
        help=f"each query's timeout, as `fleet --query-timeout` (default {QUERY_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--minutes",
        type=int,
        default=HOUR_S // 60,
        help="the history backfilled before the reads' moment (default 60; the reads look back 5 min, and "
        "1 h for the nodes seen: a shorter history makes a large fleet quicker to build, not to read)",
    )
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="build the fleet's blocks in DIR and keep them; a later run with the same --nodes and "
        "--utilization reuses them (1,000 nodes take about a minute to build)",
    )
    args = parser.parse_args()
    if args.nodes < 1 or args.refreshes < 1 or not 0 < args.utilization < 1 or not 5 <= args.minutes <= 60:
        print(
            "fleet bench: --nodes and --refreshes at least 1, --utilization between 0 and 1, --minutes 5 to 60",
            file=sys.stderr,
        )
        return 2
    try:
        require_prometheus()
    except BaseException as exc:  # noqa: BLE001 - pytest's skip outside pytest: say why in one line
        print(f"fleet bench: {exc}", file=sys.stderr)
        return 3
    at = float(T0 + args.minutes * 60)
    with tempfile.TemporaryDirectory(prefix="gpumem-fleet-bench-") as tmp:
        where = Path(args.keep) if args.keep else Path(tmp)
        data = build_fleet(args.nodes, args.utilization, where, args.minutes * 60)
        if args.rules:
            data = _with_rules(data, Path(tmp), at)
        with running(data) as url:
            _measure(url, at, args)
            frame, whole, rows, rss = asyncio.run(first_frame(url, at, args.query_timeout))
            print(
                f"fleet screen: first frame with the fleet (a first look) after {frame * 1000:,.0f} ms, the whole "
                f"picture after {whole * 1000:,.0f} ms, every row in after {rows * 1000:,.0f} ms; "
                f"RSS {rss / 2**20:,.0f} MiB"
            )
    return 0


def _with_rules(data: Path, where: Path, at: float) -> Path:
    """A copy of the blocks (hard links) with the series of `gpumem-tui fleet rules` backfilled for the last
    RULES_S before `at` by `promtool tsdb create-blocks-from rules`, evaluated against the raw blocks; then, in a
    second run against those, the change record, which reads the figures. Backfilled series have no staleness
    markers: the record's first evaluation (every node new) would linger in the reads' 5-minute lookback where a
    live server's would not, so the record starts at the figures' second evaluation."""
    rules = where / "rules.yml"
    rules.write_text(rule_group(READS["overview"], RULES_EVERY_S), encoding="utf-8")
    span = (at - RULES_S, at)
    started = time.perf_counter()
    figures = _linked(data, where / "with-figures")
    with running(data) as url:
        backfill_rules(url, rules, span, RULES_EVERY_S, figures)
    merged = _linked(figures, where / "with-rules")
    rules.write_text(changes_group(READS["overview"], RULES_EVERY_S), encoding="utf-8")
    with running(figures) as url:  # from the second evaluation: a live server's first is every node new, once
        backfill_rules(url, rules, (span[0] + RULES_EVERY_S, span[1]), RULES_EVERY_S, merged)
    print(f"recording rules backfilled for the last {RULES_S} s in {time.perf_counter() - started:.1f} s")
    return merged


def _linked(blocks: Path, where: Path) -> Path:
    """A copy of `blocks` under `where`, its files hard links (a server writes only its own files beside them)."""
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(blocks, where, copy_function=os.link, ignore=shutil.ignore_patterns(*SERVED))
    return where


async def first_frame(url: str, at: float, timeout_s: float = QUERY_TIMEOUT_S) -> tuple[float, float, float, int]:
    """Seconds from starting the fleet screen (headless) to its first frame with the fleet drawn (the screen
    painted after the first look: the first read but the costly slow facts, its tables' first rows), to the
    whole picture drawn (painted after the slow facts, read at once), and to every row of it in; and the
    process's RSS then. With the history line's reader, as `gpumem-tui fleet` makes the screen (its range
    queries start after the whole picture)."""
    started = time.perf_counter()
    queries = READS["overview"]
    history = prometheus_history(Connection(url), queries, HISTORY_S, timeout_s)
    reader = prometheus_reader(Connection(url), queries, at, timeout_s, planner())
    app = GpuMemApp.of_fleet(Fleet(reader, url, poll=False, read_history=history))
    async with app.run_test(size=(160, 60)) as pilot:
        fleet = app.screen
        frame = await _painted(pilot, lambda: fleet.sample is not None or fleet.failure is not None) - started
        whole = await _painted(pilot, lambda: fleet.failure is not None or not fleet.sample.reading) - started
        while fleet.filling:
            await pilot.pause()
        advice = rules_advice(fleet.sample) if fleet.sample is not None else None
        said = advice is not None and advice in fleet.header().plain
        print(f"fleet screen: {'says to load the recording rules' if said else 'says nothing of the rules'}")
        return frame, whole, time.perf_counter() - started, psutil.Process().memory_info().rss


async def _painted(pilot, drawn) -> float:
    """perf_counter once `drawn()` holds and the screen has been painted after it."""
    while not drawn():
        await pilot.pause(0.01)
    painted = asyncio.Event()
    pilot.app.call_after_refresh(painted.set)
    await painted.wait()
    return time.perf_counter()


def build_fleet(nodes: int, utilization: float, where: Path, history_s: int = HOUR_S) -> Path:
    """The backfilled blocks of the fleet under `where` (built unless `where` already holds this fleet:
    --keep)."""
    data, made_for = where / "data", where / "fleet.txt"
    wanted = f"{nodes} nodes at utilization {utilization!r}\n"
    if history_s != HOUR_S:
        wanted = wanted.replace(" at ", f", {history_s // 60} min, at ")
    if data.is_dir() and made_for.is_file() and made_for.read_text(encoding="utf-8") == wanted:
        print(f"{nodes:,} nodes at utilization {utilization:g}: the blocks kept in {where}")
        return data
    where.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    source = write_fleet(nodes, where, utilization, history_s)
    made = time.perf_counter() - started
    started = time.perf_counter()
    shutil.rmtree(data, ignore_errors=True)
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        check=True,
        capture_output=True,
    )
    size = source.stat().st_size
    source.unlink()
    made_for.write_text(wanted, encoding="utf-8")
    filled = time.perf_counter() - started
    print(
        f"{nodes:,} nodes, {nodes * 8:,} GPUs, {nodes:,} engines at utilization "
        f"{utilization:g}, {history_s // 60} min at {STEP_S} s: "
        f"OpenMetrics {size / 1e6:,.1f} MB made in {made:.1f} s, backfilled in {filled:.1f} s"
    )
    return data


def _measure(url: str, at: float, args: argparse.Namespace) -> None:
    me = psutil.Process()
    counting = Counting()
    client_module.stream_capped = counting  # the bench's meter on every request
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores shared with other work)")
    for name in READS if args.read == "all" else [args.read]:
        runs = []
        reader = FleetReader(READS[name], FleetRules())  # one reader for all refreshes, as the fleet screen's worker
        plan = None if name == "full" else planner()  # one planner likewise
        reads = args.refreshes + (name != "full")
        for number in range(reads):
            moment = at - (reads - 1 - number) * INTERVAL_S  # the screen's pace: each refresh a later moment
            read = refresh(url, moment, reader, counting, args.query_timeout, plan)
            wall, cpu, received, queries, gpus, source, server, judge = asyncio.run(read)
            rss = me.memory_info().rss
            first = name != "full" and number == 0  # with the slow facts: not in the medians
            if not first:
                runs.append((wall, cpu, received, queries, rss, *server, judge))
            print(
                f"{name} {'first (with the slow facts)' if first else len(runs)}: {wall * 1000:,.0f} ms wall, "
                f"{cpu * 1000:,.0f} ms client CPU, {server[0] * 1000:,.0f} ms server query time "
                f"({server[1] * 1000:,.0f} ms server CPU), "
                f"{received / 2**20:,.2f} MiB received in {queries} queries, "
                f"{gpus:,} GPUs read one by one, node figures from {source}; RSS {rss / 2**20:,.0f} MiB; "
                f"then the {'judge' if plan is None else 'plans and judge'} {judge * 1000:,.0f} ms"
            )
        _summary(name, runs, args.nodes)


if __name__ == "__main__":
    sys.exit(main())
