"""Startup-log parse time on one long line (10 KB / 100 KB / 1 MB) of shapes that made regexes backtrack.

Each shape is a real line's start followed by filler a pattern used to re-scan from every position
(word characters after `key=`, digit runs after an out-of-memory message, capitals before
`KV cache size`, blanks inside a `(proc pid=N)` prefix, repeated needles). Linear: the time grows
about x10 per step; quadratic: about x100.

Run: python3 bench/parse_log.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpumem_tui.sources.engines.logparse import parse_log  # noqa: E402

CONFIG = "INFO 04-22 15:58:20 [core.py:105] Initializing a V1 LLM engine (v0.19.0) with config: model='m', "
SHAPES = {
    "engine config + word": lambda n: CONFIG + "Ab" * (n // 2),
    "engine config + digits": lambda n: CONFIG + "1" * n,
    "server args + word": lambda n: "server_args=ServerArgs(" + "a" * n,
    "profile + word": lambda n: "Memory profiling results: " + "a1" * (n // 2),
    "CUDA OOM + digits": lambda n: "torch.OutOfMemoryError: CUDA out of memory. " + "1" * n,
    "capitals + KV size": lambda n: "KV cache size: " + "A" * n + "x",
    "(proc + blanks": lambda n: "(" + " " * n + "x",
    "repeated needle": lambda n: "Load weight end. type=a" * (n // 23),
}
SIZES = (10_000, 100_000, 1_000_000)


def seconds(line: str) -> float:
    start = time.perf_counter()
    parse_log(line)
    return time.perf_counter() - start


def main() -> None:
    print(f"{'shape':24}" + "".join(f"{n // 1000:>9,} KB" for n in SIZES) + "   1 MB / 10 KB")
    for name, make in SHAPES.items():
        times = [seconds(make(n)) for n in SIZES]
        cells = "".join(f"{t * 1e3:9.1f} ms" for t in times)
        print(f"{name:24}{cells}   x{times[-1] / max(times[0], 1e-9):.0f} (linear ~x100)")


if __name__ == "__main__":
    main()
