"""Write SVG screenshots of every screen, from the demo scenarios, into a folder (default screenshots/).

Run: python3 -m gpumem_tui.app.screenshots [FOLDER]
Each picture is the TUI over a simulated node after up to a minute of refreshes (from where the demo
opens), at a frozen moment; the fleet's is `fleet --demo`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.demo_app import demo_app
from gpumem_tui.app.screens.fleet import Fleet
from gpumem_tui.catalog import load_catalog
from gpumem_tui.demo import ManualClock, load_scenario
from gpumem_tui.demo.fleet_answers import DEMO_SOURCE, demo_fleet
from gpumem_tui.demo.fleet_history import demo_fleet_history
from gpumem_tui.diagnosis.fleet.plans import plan_fleet

# (file name, scenario, moment in seconds, terminal size, keys pressed before the picture)
SHOTS = [
    ("monitor-healthy-8b", "healthy-8b", 300, (160, 48), ()),
    ("monitor-noisy-neighbour", "noisy-neighbour", 55, (160, 48), ()),
    ("monitor-wrong-precision", "wrong-precision", 90, (160, 48), ()),
    ("monitor-kv-pressure-80x24", "kv-pressure", 75, (80, 24), ()),
    ("monitor-gpu-lost", "gpu-lost", 75, (160, 48), ()),
    ("monitor-busy-node-80x24", "busy-node", 300, (80, 24), ()),
    ("monitor-busy-node", "busy-node", 300, (160, 48), ()),
    ("monitor-mig-node", "mig-node", 60, (120, 40), ()),
    ("monitor-slurm-denied", "slurm-denied", 60, (120, 40), ()),
    ("monitor-k8s-two-pods", "k8s-two-pods", 60, (160, 48), ()),
    ("monitor-sglang-node", "sglang-node", 80, (160, 48), ()),
    ("planner", "healthy-8b", 300, (160, 48), ("p",)),
    ("help", "healthy-8b", 300, (100, 30), ("question_mark",)),
]

FLEET_SHOTS = [("fleet-demo", (120, 40))]
"""`gpumem-tui fleet --demo`: (file name, terminal size)."""


async def shoot(name: str, scenario: str, moment: float, size: tuple[int, int], keys: tuple, folder: Path) -> Path:
    catalog = load_catalog()
    first = max(load_scenario(scenario).start_s, moment - 60)  # where the TUI would open, or a minute before
    clock = ManualClock(first)
    app = demo_app(scenario, clock, catalog)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()  # the first sample drawn, as each one after it
        node = app.node_screen
        assert node is not None  # the app opens on the node
        for t in range(int(first), int(moment) + 1, 5):
            clock.set(t)
            node.refresh_now()
            await app.workers.wait_for_complete()
            await pilot.pause()
        for key in keys:
            await pilot.press(key)
        await pilot.pause()
        path = folder / f"{name}.svg"
        app.save_screenshot(str(path))
    return path


async def shoot_fleet(name: str, size: tuple[int, int], folder: Path) -> Path:
    # the simulator runs its own event loop; each engine planned from the catalog, as `fleet --demo` plans it
    sample = await asyncio.to_thread(lambda: plan_fleet(demo_fleet(), load_catalog()))
    history = await asyncio.to_thread(demo_fleet_history, 3600.0)

    async def read():
        return sample

    async def read_history(_at: float):
        return history

    app = GpuMemApp.of_fleet(Fleet(read, DEMO_SOURCE, poll=False, read_history=read_history))
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.pause()  # the rows added after the first frame drawn too
        path = folder / f"{name}.svg"
        app.save_screenshot(str(path))
    return path


def main(argv: list[str]) -> int:
    folder = Path(argv[0] if argv else "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    for shot in SHOTS:
        print(asyncio.run(shoot(*shot, folder)))
    for name, size in FLEET_SHOTS:
        print(asyncio.run(shoot_fleet(name, size, folder)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
