"""`enter` on a node of the fleet screen opens the TUI's own single-node screen on that node, judged as any node
is, and q or escape there comes back to the fleet as it was left (one app, run headless with a pilot: the node's
screen is pushed over the fleet's and popped). The fleet is the simulated one of `fleet --demo`."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.fleet import Fleet, FleetScreen
from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.cli.fleet_screen import node_opener
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
    return app.screen.query_one("#fleet-nodes", DataTable)


def _app(fleet_sample, reads: list[int] | None = None) -> GpuMemApp:
    async def read():
        if reads is not None:
            reads.append(len(reads))
        return fleet_sample

    opener = node_opener(lambda name: demo_node_feed(name, lambda: fleet_sample), 5.0)
    return GpuMemApp.of_fleet(Fleet(read, "demo", interval_s=15, poll=False, open_node=opener))


@pytest.mark.parametrize("key", ["escape", "q"])
def test_enter_opens_the_node_and_escape_or_q_comes_back_to_the_fleet(fleet_sample, key):
    seen: dict[str, object] = {}
    reads: list[int] = []

    async def drive(pilot):
        await _settled(pilot)
        fleet = pilot.app.screen
        nodes = _nodes(pilot.app)
        assert nodes.has_focus and nodes.cursor_row == 0  # the table whose rows open: focused first
        row = [k.value for k in nodes.rows].index("node-d")
        await pilot.press(*["down"] * row)
        await pilot.press("enter")
        seen["node"] = await _settled(pilot)
        assert isinstance(pilot.app.screen, MainScreen)
        seen["sample"] = pilot.app.screen.node.sample
        read_before = len(reads)
        await pilot.press(key)
        await pilot.pause()
        assert pilot.app.screen is fleet  # the same screen, never gone: its sample and history with it
        assert fleet.sample is not None  # drawn at once, before the read on the way back ends
        await _settled(pilot)
        nodes = _nodes(pilot.app)
        key_now = nodes.coordinate_to_cell_key(nodes.cursor_coordinate).row_key.value
        seen["back"] = (nodes.has_focus, nodes.cursor_row, key_now, len(reads) > read_before)
        seen["row"] = row
        await pilot.press("q")

    app = _app(fleet_sample, reads)
    app.run(headless=True, size=(160, 60), auto_pilot=drive)
    assert app.return_code == 0 and not app.is_running
    sample = seen["sample"]
    assert sample.hostname == "node-d" and sample.source == "prometheus"  # the node's own series
    text = seen["node"]
    assert "node node-d" in text  # the header names the node and the fleet it came from
    assert "q back" in text  # the footer says where q goes
    assert "kv_saturated" in text or "KV cache full" in text  # judged as a node is
    assert "Prometheus gives no pids" in text and "GPU 0: held by pod" in text  # said where the processes would be
    assert seen["back"] == (True, seen["row"], "node-d", True)  # the fleet as it was left, read again


def test_enter_does_nothing_where_nodes_cannot_be_opened(fleet_sample):
    async def read():
        return fleet_sample

    async def drive(pilot):
        await _settled(pilot)
        _nodes(pilot.app).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert pilot.app.is_running and isinstance(pilot.app.screen, FleetScreen)
        await pilot.press("q")

    app = GpuMemApp.of_fleet(Fleet(read, "demo", interval_s=15, poll=False))
    assert app.run(headless=True, size=(160, 60), auto_pilot=drive) is None


def test_one_unit_for_the_fleet_and_its_nodes_and_memory_first_at_70_columns(fleet_sample):
    """The fleet speaks the node screen's unit (GB until `g`); `g` on either switches both; at 70 columns the
    nodes table's Used and Free stay on screen (the cards' long names come after them)."""
    seen: dict[str, object] = {}

    async def drive(pilot):
        text = await _settled(pilot)
        seen["narrow"] = screen_text(pilot.app)
        seen["fleet"] = [str(c) for c in _nodes(pilot.app).get_row_at(0)]
        await pilot.press("enter")
        await _settled(pilot)
        seen["node unit"] = pilot.app.screen.node.unit
        await pilot.press("g")  # GiB, there
        await pilot.press("escape")
        await _settled(pilot)
        seen["back"] = [str(c) for c in _nodes(pilot.app).get_row_at(0)]
        assert text
        await pilot.press("q")

    app = _app(fleet_sample)
    app.run(headless=True, size=(70, 20), auto_pilot=drive)
    header = next(row for row in seen["narrow"] if "Worst finding" in row)
    assert "Used" in header and "Free" in header
    assert seen["fleet"][2].endswith(" GB") and seen["node unit"] == "GB"
    assert seen["back"][2].endswith(" GiB")
