"""`q` ends the fleet screen while a read hangs: a Prometheus that takes its whole timeout (or the demo's
history, computed for seconds) must not keep the person who pressed `q` waiting for it. Each case runs the
app in a process of its own, a read there never ending: the process must end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import asyncio, sys
from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.fleet import Fleet
from gpumem_tui.demo.fleet_answers import demo_sample
from tests.sources.prometheus.conftest import FLEET

hangs = sys.argv[1]
sample = demo_sample(FLEET, 120, 5, "demo")

async def read():
    if hangs == "read":
        await asyncio.sleep(3600)  # as a server that never answers within the client's timeouts
    return sample

async def history(at):
    await asyncio.sleep(3600)

app = GpuMemApp.of_fleet(Fleet(read, "demo", poll=False, read_history=history))

async def pilot(p):
    for _ in range(40):
        await p.pause(0.05)
    await p.press("q")

app.run(headless=True, size=(120, 40), auto_pilot=pilot)
print("ended", flush=True)
"""


@pytest.mark.parametrize("hangs", ["read", "history"])
def test_q_ends_the_app_while_a_read_hangs(hangs):
    try:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, hangs], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"q did not end the app while its {hangs} hung")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ended")
