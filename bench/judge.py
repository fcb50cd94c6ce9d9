"""Cost of judging one sample (auto plans + findings) on a busy node: ms per sample, share of a core.

    python3 bench/judge.py [--samples N]

The sample is the gpu-lost scenario at 120 s (four H100s, four vLLM engines scraped over HTTP), taken
once; the loop then times `Investigation.add` alone (history, auto plans, findings, exit forensics over
the app's bounded window), as the app runs it once per refresh: worded in one unit (`check`, the exporter)
and in both of the screen's (`app/node.UNITS`: `g` then only draws again).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpumem_tui.app.node import UNITS  # noqa: E402
from gpumem_tui.catalog import load_catalog  # noqa: E402
from gpumem_tui.demo import ManualClock  # noqa: E402
from gpumem_tui.demo.feed import DemoFeed  # noqa: E402
from gpumem_tui.diagnosis.findings import Thresholds  # noqa: E402
from gpumem_tui.diagnosis.forensics import Investigation, memory_window_s  # noqa: E402

INTERVAL_S = 1.0


async def take_sample():
    clock = ManualClock(120)
    feed = DemoFeed("gpu-lost", clock)
    try:
        return await feed.sample()
    finally:
        await feed.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args()
    sample, catalog, thresholds = asyncio.run(take_sample()), load_catalog(), Thresholds()
    print(f"engines per sample      {len(sample.engines)}")
    for units in (UNITS[:1], UNITS):
        watch = Investigation(catalog, None, thresholds, memory_window_s(thresholds), units)
        start = time.perf_counter()
        for k in range(args.samples):
            watch.add(sample.model_copy(update={"timestamp": sample.timestamp + k}))
        per_sample = (time.perf_counter() - start) / args.samples
        said = " and ".join(units)
        print(f"worded in {said}: ms per judged sample {per_sample * 1000:.2f}, ", end="")
        print(f"share of a core at {INTERVAL_S:g} s {per_sample / INTERVAL_S:.2%}")


if __name__ == "__main__":
    main()
