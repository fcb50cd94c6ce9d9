"""The picture of `gpumem-tui fleet --demo` at 120x40. Update after an intended change with
`python3 -m pytest tests/app/test_fleet_snapshot.py --snapshot-update`, and look at the new picture."""

from __future__ import annotations

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.fleet import Fleet
from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli.fleet_screen import demo_history, demo_reader
from gpumem_tui.demo.fleet_answers import DEMO_SOURCE
from gpumem_tui.diagnosis.fleet.plans import plan_fleet


async def _settled(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    # the picture is of the fleet: a read that failed would be pictured as faithfully, and pass
    fleet = pilot.app.screen
    assert fleet.failure is None and fleet.sample is not None, fleet.failure
    assert fleet.history is not None and fleet.history_failure is None, fleet.history_failure
    width, height = pilot.app.size  # compose afresh, as test_snapshots.py does, so runs compare equal
    await pilot.resize_terminal(width + 1, height)
    await pilot.pause()
    await pilot.resize_terminal(width, height)
    await pilot.pause()


def test_fleet_demo(snap_compare):
    """Ten simulated nodes: the header says the source, 2026-01-01 00:02:00 UTC, 10 nodes, 29 GPUs, 13 engines,
    13 joined, data age 0 s, source ok; under it the verdict in `fleet check`'s words (CRITICAL, red). Nodes first:
    node-c (engine_down) and node-h first, red, their worst finding beside the name; node-e marked stale; node-h
    and node-i (which run gpumem-tui export) with their other processes' memory (0.0 GiB), the others unknown;
    node-f (idle, 8 x H200) last. Findings by code, critical first; then the history of the demo's 2 min run
    (memory, fullest KV cache, waiting, preemptions) as sparklines; the models (Llama-3.1-70B's worst finding
    kv_pool_short, red; the 8B's engine_down); the notes of what is unknown last."""
    reader = demo_reader(plan=lambda sample: plan_fleet(sample, load_catalog()))
    app = GpuMemApp.of_fleet(Fleet(reader, DEMO_SOURCE, poll=False, read_history=demo_history(3600)))
    assert snap_compare(app, terminal_size=(120, 40), run_before=_settled)
