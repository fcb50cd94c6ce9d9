"""Cost of one collection over the fake NVML driver, 8 GPUs and 64 processes: ms per sample, share of a core.

    python3 bench/collect_nvml.py [--samples N]

Runs the real NVML source and the real pynvml binding over the fake NVML driver (so the Python work per
sample is the source's and the binding's own plus the fake driver's bookkeeping; a real driver adds its
ioctl time per call, listed as `NVML calls per sample`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpumem_tui.demo import FakeDriver, ManualClock, SimulatedHost, SimulatedNode  # noqa: E402
from gpumem_tui.demo.scenario import GpuGroup, ProcessSpec, Scenario  # noqa: E402
from gpumem_tui.sources.collector import Collector  # noqa: E402
from gpumem_tui.sources.host import HostSource  # noqa: E402
from gpumem_tui.sources.nvml import NvmlSource, bind  # noqa: E402

GPUS, PROCESSES, INTERVAL_S = 8, 64, 1.0
RELEASES = ("470.256.02", "535.54.03", "550.127.05", "570.124.06")
"""Drivers whose missing symbols differ: no _v3 lists or memory v2 (470), 32-byte _v3 entries (535.54), no
TemperatureV (before 565)."""


def node() -> SimulatedNode:
    processes = [ProcessSpec(id=f"p{k}", gpus=[k % GPUS], memory_gib=4, pid=10_000 + k) for k in range(PROCESSES)]
    scenario = Scenario(name="bench", gpus=[GpuGroup(model="h100", count=GPUS)], processes=processes)
    simulated = SimulatedNode(scenario, clock=ManualClock(5))
    simulated.sync()
    return simulated


def lookups(version: str, samples: int = 5) -> str:
    """Symbol lookups that found nothing on the first sample and on the later ones: a version of a call the
    driver lacks is looked up once, never per sample."""
    fake = FakeDriver(node(), version)
    source = NvmlSource(bind(fake))
    source.read()
    first = sum(fake.missed.values())
    for _ in range(samples - 1):
        source.read()
    later = sum(fake.missed.values()) - first
    return f"driver {version:<11} symbols missing: {first} looked up on sample 1, {later} on samples 2-{samples}"


def cost(label: str, action, samples: int) -> float:
    """CPU milliseconds per call (process time), after a warm-up."""
    for _ in range(20):
        action()
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    for _ in range(samples):
        action()
    cpu_ms = (time.process_time() - start_cpu) * 1000 / samples
    wall_ms = (time.perf_counter() - start_wall) * 1000 / samples
    share = cpu_ms / (INTERVAL_S * 1000) * 100
    print(f"{label:<46} {cpu_ms:7.3f} ms CPU ({wall_ms:7.3f} ms wall)  {share:6.3f} % of one core at 1 s")
    return cpu_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=500)
    samples = parser.parse_args().samples
    simulated = node()
    fake = FakeDriver(simulated)
    source = NvmlSource(bind(fake))
    reading = source.read()
    assert len(reading.gpus) == GPUS and len(reading.processes) == PROCESSES, "bench node is not 8 x 64"
    calls_before = fake.calls
    source.read()
    print(f"{GPUS} GPUs, {PROCESSES} processes, {samples} samples; NVML calls per sample: {fake.calls - calls_before}")
    for version in RELEASES:
        print(lookups(version))
    cost("NVML source + binding over the fake driver", source.read, samples)
    collector = Collector(source, SimulatedHost(simulated), source="bench", hostname="bench", clock=time.time)
    cost("whole sample (NVML + simulated host)", collector.sample, samples)
    host, pids = HostSource(), [int(p) for p in os.listdir("/proc") if p.isdigit()][:PROCESSES]
    host.describe(pids)
    cost(f"psutil host view of {len(pids)} real pids", lambda: host.describe(pids), samples)


if __name__ == "__main__":
    main()
