"""What a Prometheus query's deadlines cost: the client's CPU per query against a loopback server that answers
at once, asked 20 at a time (as a first fleet read asks) on one client, so each query pays the deadline, the
refresh's deadline and the wait for a connection slot. Run it with another tree first on PYTHONPATH for the
figure before; it prints microseconds of CPU per query, the median of 5 runs.

    PYTHONPATH=. python bench/request_deadline.py
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient  # noqa: E402
from tests.sources.prometheus.fake import answering  # noqa: E402

QUERIES = 400
AT_ONCE = 20
ANSWER = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()


async def _asked(url: str) -> float:
    """CPU seconds of this process (the server's threads included, the same in both) for QUERIES queries."""
    async with PrometheusClient(Connection(url)) as client:
        await client.query("warm", 0)
        began = time.process_time()
        for start in range(0, QUERIES, AT_ONCE):
            await asyncio.gather(*(client.query(f"q{i}", 0) for i in range(start, start + AT_ONCE)))
        return time.process_time() - began


def main() -> None:
    with answering(200, ANSWER) as url:
        runs = [asyncio.run(_asked(url)) for _ in range(5)]
    print(f"{statistics.median(runs) / QUERIES * 1e6:.0f} us of CPU per query ({QUERIES} queries, {AT_ONCE} at once)")


if __name__ == "__main__":
    main()
