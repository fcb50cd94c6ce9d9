"""Where a fleet refresh's client CPU goes: a real Prometheus over blocks kept by `bench/fleet.py --keep DIR`
(with `--rules`, the blocks with the rules are DIR/with-rules only while that run lasts: keep a copy), read
refresh after refresh by one FleetReader at the fleet screen's pace (15 s apart, ending at the history's end),
with each part of the reader timed in process time: the answers parsed, the engines' keys, the engines' records,
the nodes' part, the reporting nodes, the whole build, and the collector's time; then the judge of the sample
(the fleet screen's worker judges each sample it reads: a refresh of the screen is both); then the peak RSS.

Run: python3 bench/fleet_parts.py DIR [--minutes 10] [--refreshes 6] [--ages-move]
(the --minutes the blocks were built with: the last moment read is the history's end). The simulated fleet's
samples are in step with the rules, so each node's recorded age reads the same at every evaluation;
`--ages-move` adds 0 to 6 s to each node's age, a different amount at each evaluation, as on a fleet whose
scrapes are not in step with the rules."""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.sources.prometheus.server, from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet import READS  # noqa: E402

from gpumem_tui.cli.fleet_opts import INTERVAL_S  # noqa: E402
from gpumem_tui.diagnosis.fleet.judge import judge_fleet  # noqa: E402
from gpumem_tui.diagnosis.fleet.reading import FleetRules  # noqa: E402
from gpumem_tui.sources.prometheus import answers, fleet, kept_recorded, reader  # noqa: E402
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, Result  # noqa: E402
from gpumem_tui.sources.prometheus.records import FleetSample  # noqa: E402
from tests.sources.prometheus.server import T0, running  # noqa: E402

PARTS = (
    (answers.Answer, "_feed", "parse"),
    (answers.Answer, "_close", "parse"),
    (reader.FleetReader, "_keys", "engine keys"),
    (fleet, "engines_of", "engines"),
    (fleet, "node_part", "nodes"),
    (reader.FleetReader, "_reporting", "reporting"),
    (reader.FleetReader, "_build", "build"),
)
"""What is timed: (owner, attribute, part). A part's time includes the parts it calls."""
spent: dict[str, float] = {}


def _timed(owner: object, name: str, part: str) -> None:
    wrapped = getattr(owner, name)

    @functools.wraps(wrapped)
    def timed(*args, **kwargs):
        started = time.process_time()
        try:
            return wrapped(*args, **kwargs)
        finally:
            spent[part] = spent.get(part, 0.0) + time.process_time() - started

    setattr(owner, name, timed)


def _ages_move() -> None:
    """The recorded ages as they read on a fleet whose scrapes are not in step with the rules: each node's moved
    by 0 to 6 s, by node and moment (the labels kept: the label memo's objects)."""
    asked = kept_recorded.ask

    async def ask(client, promql, at, **options):
        results, failures = await asked(client, promql, at, **options)
        age = results.get("nodes_age")
        if age is not None:
            moved = [s._replace(value=s.value + (i + int(at)) % 7) for i, s in enumerate(age.series)]
            results["nodes_age"] = Result(moved, age.warnings)
        return results, failures

    kept_recorded.ask = ask


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="the kept blocks")
    parser.add_argument("--minutes", type=int, default=10, help="the history's length they were built with")
    parser.add_argument("--refreshes", type=int, default=6, help="reads to time, the first with the slow facts")
    parser.add_argument("--ages-move", action="store_true", help="each node's recorded age moves at each evaluation")
    args = parser.parse_args()
    if not args.dir.is_dir():
        print(f"fleet parts: no folder {args.dir}", file=sys.stderr)
        return 2
    for owner, name, part in PARTS:
        _timed(owner, name, part)
    if args.ages_move:
        _ages_move()
    collecting: list[float] = []
    gc.callbacks.append(lambda phase, _: collecting.append(time.process_time() * (1 if phase == "stop" else -1)))
    fleet_reader = reader.FleetReader(READS["overview"], FleetRules())
    at = float(T0 + args.minutes * 60)

    read_now: list[FleetSample] = []

    async def read(url: str, moment: float) -> None:
        """The sample handed out aside: returned from `asyncio.run` on the main thread, Python formats it
        on the way out (seconds at 10,000 nodes; fleet_cmd.py does the same)."""
        async with PrometheusClient(Connection(url), query_timeout_s=120) as client:
            read_now[:] = [await fleet_reader.read(client, moment)]

    with running(args.dir) as url:
        for number in range(args.refreshes):
            spent.clear()
            collecting.clear()
            started = time.process_time()
            asyncio.run(read(url, at - (args.refreshes - 1 - number) * INTERVAL_S))
            cpu, sample = time.process_time() - started, read_now[0]
            judged = time.process_time()
            judge_fleet(sample)  # the fleet screen's worker judges each sample it reads
            judge = time.process_time() - judged
            parts = ", ".join(f"{part} {seconds * 1000:,.0f} ms" for part, seconds in spent.items())
            collector = sum(collecting) * 1000
            print(
                f"refresh {number}: {cpu * 1000:,.0f} ms client CPU; {parts}; collector {collector:,.0f} ms; "
                f"then the judge {judge * 1000:,.0f} ms"
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:,.0f} MiB (the reader, its last sample and the bench)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
