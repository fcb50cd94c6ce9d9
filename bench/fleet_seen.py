"""What the slow fact `exporters_seen` (nodes whose `gpumem-tui export` published within the hour, with the
time of the newest sample) costs the server, against the queries beside it: N exporters that publish every
15 s for an hour, a tenth of them stopped half an hour in, backfilled into a real Prometheus; each query asked
at the hour's end, `--repeat` times. It prints each query's series and median / least / most wall time (the
server's work and one loopback round trip), and the subquery at 1 min steps for comparison. Nothing is
asserted: it is measured.

Run: python3 bench/fleet_seen.py [--nodes 1000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.sources.prometheus.server, from a checkout

from gpumem_tui.sources.prometheus.queries import NODE_LABELS, Queries  # noqa: E402
from tests.sources.prometheus.server import T0, backfill, require_prometheus, running  # noqa: E402

HOUR_S, STEP_S = 3600, 15


def series(nodes: int) -> str:
    lines = ["# TYPE gpumem_sample_timestamp_seconds gauge"]
    for n in range(nodes):
        labels = f'Hostname="node-{n:04d}",job="gpumem-tui",instance="node-{n:04d}:9877"'
        stop = HOUR_S // 2 if n % 10 == 0 else HOUR_S
        lines += [f"gpumem_sample_timestamp_seconds{{{labels}}} {T0 + t} {T0 + t}" for t in range(0, stop + 1, STEP_S)]
    return "\n".join(lines) + "\n# EOF\n"


def timed(url: str, promql: str, repeat: int) -> tuple[int, list[float]]:
    walls, found = [], 0
    for _ in range(repeat):
        body = urllib.parse.urlencode({"query": promql, "time": T0 + HOUR_S}).encode()
        wall = time.perf_counter()
        with urllib.request.urlopen(f"{url}/api/v1/query", body, timeout=60) as response:
            found = len(json.load(response)["data"]["result"])
        walls.append((time.perf_counter() - wall) * 1000)
    return found, walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    require_prometheus()
    q = Queries()
    nodes = ", ".join(NODE_LABELS)
    asked = {
        "exporters_seen (5 min steps)": q.exporters_seen,
        "the same at 1 min steps": q.exporters_seen.replace(":5m]", ":1m]"),
        "exporters_age (per refresh)": q.exporters_age,
        "count last_over_time, as nodes_seen": f"count by ({nodes}) "
        "(last_over_time(gpumem_sample_timestamp_seconds[1h]))",
    }
    with tempfile.TemporaryDirectory() as folder, running(backfill(series(args.nodes), Path(folder))) as url:
        for name, promql in asked.items():
            found, walls = timed(url, promql, args.repeat)
            print(
                f"{name}: {found:,} series, median {statistics.median(walls):.0f} ms "
                f"(least {min(walls):.0f}, most {max(walls):.0f})"
            )


if __name__ == "__main__":
    main()
