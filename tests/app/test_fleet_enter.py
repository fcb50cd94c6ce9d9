"""`enter` on a node of the fleet screen opens the TUI's own single-node screen on that node, judged as any node
is, and q or escape there comes back to the fleet as it was left (cli/fleet_screen.session, run headless with
a pilot driving each screen in turn). The fleet is the simulated one of `fleet --demo`."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from gpumem_tui.app.fleet_app import FleetApp
from gpumem_tui.cli.fleet_screen import node_screen, session
from gpumem_tui.demo.fleet_answers import demo_node_feed, demo_sample
from tests.app.screen_text import screen_text
from tests.sources.prometheus.conftest import FLEET


@pytest.fixture(scope="module")
def fleet_sample():
    return demo_sample(FLEET, 120, 5, "demo: 8 simulated nodes")


async def _settled(pilot) -> str:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()
    return " ".join(" ".join(screen_text(pilot.app)).split())


def _nodes(app) -> DataTable:
    return app.query_one("#fleet-nodes", DataTable)


def _run(fleet_sample, scripts) -> tuple[int, list[FleetApp]]:
    async def read():
        return fleet_sample

    fleets: list[FleetApp] = []

    def fleet(kept):
        app = FleetApp(read, "demo", interval_s=15, poll=False, opens_nodes=True, kept=kept)
        fleets.append(app)
        return app

    node = node_screen(lambda name: demo_node_feed(name, lambda: fleet_sample), 5.0)
    given = iter(scripts)
    code = session(fleet, node, run_app=lambda app: app.run(headless=True, size=(160, 60), auto_pilot=next(given)))
    return code, fleets


@pytest.mark.parametrize("key", ["escape", "q"])
def test_enter_opens_the_node_and_escape_or_q_comes_back_to_the_fleet(fleet_sample, key):
    seen: dict[str, object] = {}

    async def on_fleet(pilot):
        await _settled(pilot)
        nodes = _nodes(pilot.app)
        assert nodes.has_focus and nodes.cursor_row == 0  # the table whose rows open: focused first
        row = [k.value for k in nodes.rows].index("node-d")
        await pilot.press(*["down"] * row)
        seen["row"] = row
        await pilot.press("enter")

    async def on_node(pilot):
        seen["node"] = await _settled(pilot)
        seen["sample"] = pilot.app.sample
        await pilot.press(key)

    async def on_fleet_again(pilot):
        drawn = pilot.app.sample is not None  # before its first read ends
        await _settled(pilot)
        nodes = _nodes(pilot.app)
        key = nodes.coordinate_to_cell_key(nodes.cursor_coordinate).row_key.value
        seen["back"] = (nodes.has_focus, nodes.cursor_row, key, drawn)
        await pilot.press("q")

    code, fleets = _run(fleet_sample, [on_fleet, on_node, on_fleet_again])
    assert code == 0 and len(fleets) == 2
    sample = seen["sample"]
    assert sample.hostname == "node-d" and sample.source == "prometheus"  # the node's own series
    text = seen["node"]
    assert "node node-d" in text  # the header names the node and the fleet it came from
    assert "kv_saturated" in text or "KV cache full" in text  # judged as a node is
    assert "Prometheus gives no pids" in text and "GPU 0: held by pod" in text  # said where the processes would be
    assert seen["back"] == (True, seen["row"], "node-d", True)  # the fleet as it was left, drawn at once


def test_enter_does_nothing_where_nodes_cannot_be_opened(fleet_sample):
    async def read():
        return fleet_sample

    async def drive(pilot):
        await _settled(pilot)
        _nodes(pilot.app).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert pilot.app.is_running
        await pilot.press("q")

    app = FleetApp(read, "demo", interval_s=15, poll=False)
    assert app.run(headless=True, size=(160, 60), auto_pilot=drive) is None
