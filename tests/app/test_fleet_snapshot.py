"""The picture of `gpumem-tui fleet --demo` at 120x40. Update after an intended change with
`python3 -m pytest tests/app/test_fleet_snapshot.py --snapshot-update`, and look at the new picture."""

from __future__ import annotations

from gpumem_tui.app.fleet_app import FleetApp
from gpumem_tui.cli.fleet_screen import demo_reader
from gpumem_tui.demo.fleet_answers import DEMO_SOURCE


async def _settled(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    width, height = pilot.app.size  # compose afresh, as test_snapshots.py does, so runs compare equal
    await pilot.resize_terminal(width + 1, height)
    await pilot.pause()
    await pilot.resize_terminal(width, height)
    await pilot.pause()


def test_fleet_demo(snap_compare):
    """Nine simulated nodes: the header says the source, 2026-01-01 00:02:00 UTC, 9 nodes, 28 GPUs, 12 engines,
    12 joined, data age 0 s, state ok. Models: Llama-3.1-70B's worst finding kv_pool_short (red), 14 GPUs (node-i's
    four from its gpumem-tui export among them), the 8B's engine_down; planned memory unknown with its reason under
    the table. Nodes: node-c (engine_down) and node-h first, red; node-e marked stale; node-h and node-i (which run
    gpumem-tui export) with their other processes' memory (0.0 GiB), the others unknown; node-f (idle, 8 x H200)
    last. Findings by code, critical first."""
    app = FleetApp(demo_reader(), DEMO_SOURCE, poll=False)
    assert snap_compare(app, terminal_size=(120, 40), run_before=_settled)
