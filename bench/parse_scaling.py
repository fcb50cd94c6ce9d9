"""Cost per series of `parse_metrics` at 1,000 / 10,000 / 100,000 series: linear when it stays flat.

Each payload names one vLLM model per four series (the gauges a record reads), so the larger payloads
also exercise the cap on records per endpoint (MAX_SERVED).

Run: python3 bench/parse_scaling.py   (prints size, ms per payload, µs per series and the ratio to the smallest)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpumem_tui.sources.engines.parse import parse_metrics  # noqa: E402
from gpumem_tui.sources.engines.prometheus import forget_lines  # noqa: E402

GAUGES = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:num_preemptions_total",
)


def payload(series: int) -> str:
    """`series` samples: each gauge once per model, model names unique."""
    models = series // len(GAUGES)
    lines = [f"# TYPE {name} gauge" for name in GAUGES]
    for name in GAUGES:
        lines += [f'{name}{{model_name="org/model-{i:06d}",engine="0"}} {i % 97}' for i in range(models)]
    return "\n".join(lines) + "\n"


def per_series(series: int) -> tuple[int, float]:
    """Payload bytes and best-of-3 seconds for one parse."""
    text = payload(series)
    best = min(_timed(text) for _ in range(3))
    return len(text), best


def _timed(text: str) -> float:
    forget_lines()  # a first parse: lines parsed before are kept (prometheus._samples)
    start = time.perf_counter()
    parse_metrics(text)
    return time.perf_counter() - start


def main() -> None:
    base = None
    for series in (1_000, 10_000, 100_000):
        size, seconds = per_series(series)
        cost = seconds / series
        base = base or cost
        print(
            f"{series:>7,} series  {size / 2**20:6.2f} MiB  {seconds * 1e3:8.1f} ms  "
            f"{cost * 1e6:6.2f} µs/series  x{cost / base:.2f} of the smallest"
        )
    print("linear: the per-series cost stays flat (x1 to x2); quadratic grows about x10 per step")


if __name__ == "__main__":
    main()
