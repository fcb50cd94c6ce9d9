"""The fleet screen over hundreds of nodes: the first rows are drawn at once and the rest after that frame
(FleetScreen._fill), so the table must end whole and in order, its columns as wide as the widest cell of any row,
the cursor on the node it was on, and a refresh that lands while rows are still being added must replace
them, not add to them; and a node opened from it and left finds its cursor where it was."""

from __future__ import annotations

from rich.cells import cell_len
from textual.widgets import DataTable

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.fleet_view import node_table
from gpumem_tui.app.node import Node
from gpumem_tui.app.screens.fleet import FIRST_ROWS, Fleet, FleetScreen
from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.sources.prometheus.records import Coverage, FleetGpu, FleetNode, FleetSample

GIB = 2**30
NODES = 3 * FIRST_ROWS + 50
LONG = "node-with-a-name-much-longer-than-the-others-349"


def _sample(critical: str | None = None) -> FleetSample:
    """NODES healthy nodes (sorted by name on screen), the last named LONG; `critical`: one node with a GPU
    left almost no free memory (a critical finding), which puts it first."""
    names = [f"node-{i:03d}" for i in range(NODES - 1)] + [LONG]
    nodes = [
        FleetNode(
            name=name,
            gpus=1,
            cards={"NVIDIA H100 80GB HBM3": 1},
            used_bytes=(79 if name == critical else 40) * GIB,
            free_bytes=(1 if name == critical else 40) * GIB,
            reserved_bytes=0,
            total_bytes=80 * GIB,
            data_age_s=1.0,
            memory_from="dcgm-exporter",
        )
        for name in names
    ]
    return FleetSample(
        source="http://prom.example:9090",
        evaluated_at=100.0,
        nodes=nodes,
        gpus=[]
        if critical is None
        else [
            FleetGpu(node=critical, index="0", uuid="GPU-1", used_bytes=79 * GIB, free_bytes=GIB, total_bytes=80 * GIB)
        ],
        coverage=Coverage(nodes=NODES, gpus=NODES),
        data_age_s=1.0,
    )


def _fleet(app: GpuMemApp) -> FleetScreen:
    screen = app.screen
    assert isinstance(screen, FleetScreen)
    return screen


def _nodes(app: GpuMemApp) -> DataTable:
    return _fleet(app).query_one("#fleet-nodes", DataTable)


def _names(app: GpuMemApp) -> list[str]:
    table = _nodes(app)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def _filled(app: GpuMemApp, pilot) -> None:
    """Until every table has all its rows (bounded: a fill that never ends fails here)."""
    await app.workers.wait_for_complete()
    for _ in range(200):
        await pilot.pause()
        if not _fleet(app).filling:
            return
    raise AssertionError(f"rows still being added: {sorted(_fleet(app).filling)}")


def _app(samples: list[FleetSample], **kwargs) -> GpuMemApp:
    async def read():
        return samples[0] if len(samples) == 1 else samples.pop(0)

    return GpuMemApp.of_fleet(
        Fleet(read, "http://prom.example:9090", interval_s=15, poll=False, clock=lambda: 101.0, **kwargs)
    )


def _opener(opened: list[str], catalog):
    """Records each node opened; its screen shows a simulated idle node."""

    def open_node(name: str) -> Node:
        opened.append(name)
        return Node(DemoFeed("idle-node", ManualClock(300)), Judge(catalog), poll=False)

    return open_node


async def _there_and_back(app: GpuMemApp, pilot, node: str) -> None:
    """The cursor on `node`, its screen opened, and escape back to the fleet."""
    table = _nodes(app)
    table.move_cursor(row=table.get_row_index(node))
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()
    assert isinstance(app.screen, MainScreen)
    await pilot.press("escape")
    await pilot.pause()


async def test_every_row_comes_in_order_and_the_columns_fit_the_widest_cell():
    app = _app([_sample()])
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        first = [column.width for column in _nodes(app).columns.values()]
        await _filled(app, pilot)
        names = _names(app)
        assert names == sorted(names) and len(names) == NODES == len(set(names))
        assert names[-1] == LONG
        widths = [column.width for column in _nodes(app).columns.values()]
        assert widths == first  # the rows added later did not move a column
        assert widths[0] == cell_len(LONG)  # the last row's name fits its column


async def test_a_refresh_while_rows_are_being_added_replaces_them():
    app = _app([_sample()])
    async with app.run_test(size=(160, 50)) as pilot:
        await _filled(app, pilot)
        _fleet(app)._fill("nodes", node_table(_sample(), []))  # a redraw: its first rows now, the rest after a frame
        assert _fleet(app).filling  # that fill is still adding rows
        renamed = _sample().model_copy(
            update={"nodes": [n.model_copy(update={"name": f"other-{n.name}"}) for n in _sample().nodes]}
        )
        _fleet(app)._fill("nodes", node_table(renamed, []))  # as a refresh's redraw does
        await _filled(app, pilot)
        names = _names(app)
        assert len(names) == NODES == len(set(names))
        assert all(name.startswith("other-") for name in names)


async def test_the_cursor_stays_on_its_node_when_a_refresh_moves_it_past_the_first_rows():
    app = _app([_sample(), _sample(critical="node-300")])
    async with app.run_test(size=(160, 50)) as pilot:
        await _filled(app, pilot)
        table = _nodes(app)
        table.move_cursor(row=FIRST_ROWS + 20)
        on = _names(app)[FIRST_ROWS + 20]
        _fleet(app).refresh_now()
        await _filled(app, pilot)
        assert _names(app)[0] == "node-300"  # every row after it one further down
        assert str(table.get_row_at(table.cursor_row)[0]) == on


async def test_coming_back_from_a_node_puts_the_cursor_on_it_though_its_row_comes_late(catalog):
    opened: list[str] = []
    app = _app([_sample()], open_node=_opener(opened, catalog))
    async with app.run_test(size=(160, 50)) as pilot:
        await _filled(app, pilot)
        await _there_and_back(app, pilot, "node-320")
        await _filled(app, pilot)  # the read on the way back: the table filled again, row 320 past the first rows
        table = _nodes(app)
        assert opened == ["node-320"] and str(table.get_row_at(table.cursor_row)[0]) == "node-320"


async def test_a_second_redraw_before_the_cursors_row_came_keeps_the_cursor_on_its_node():
    # A failed read redraws the tables with the sample kept; a refresh redraws them again: either can land
    # while an earlier redraw has not yet added the row the cursor goes back to.
    app = _app([_sample()])
    async with app.run_test(size=(160, 50)) as pilot:
        await _filled(app, pilot)
        table = _nodes(app)
        table.move_cursor(row=FIRST_ROWS + 20)
        on = _names(app)[FIRST_ROWS + 20]
        _fleet(app)._fill("nodes", node_table(_sample(), []))
        _fleet(app)._fill("nodes", node_table(_sample(), []))  # the next redraw, before the frame
        await _filled(app, pilot)
        assert str(table.get_row_at(table.cursor_row)[0]) == on


async def test_enter_while_rows_are_being_added_opens_the_node_the_cursor_was_on(catalog):
    opened: list[str] = []
    app = _app([_sample()], open_node=_opener(opened, catalog))
    async with app.run_test(size=(160, 50)) as pilot:
        await _filled(app, pilot)
        table = _nodes(app)
        table.move_cursor(row=FIRST_ROWS + 20)
        on = _names(app)[FIRST_ROWS + 20]
        _fleet(app)._fill("nodes", node_table(_sample(), []))  # a refresh's redraw; enter comes before the next frame
        _fleet(app).action_open_node()
        await pilot.pause()
    assert opened == [on]


async def test_a_redraw_before_the_row_of_the_node_come_back_from_keeps_the_cursor_for_it(catalog):
    # Back from a node's screen whose row comes after the first rows, the read on the way back fills the table
    # again; a second redraw before that fill ends (a read that failed at once, a refresh) must not forget it.
    app = _app([_sample()], open_node=_opener([], catalog))
    async with app.run_test(size=(160, 50)) as pilot:
        await _filled(app, pilot)
        await _there_and_back(app, pilot, "node-320")
        _fleet(app)._fill("nodes", node_table(_sample(), []))
        _fleet(app)._fill("nodes", node_table(_sample(), []))
        await _filled(app, pilot)
        table = _nodes(app)
        assert str(table.get_row_at(table.cursor_row)[0]) == "node-320"


async def test_a_node_name_that_repeats_past_the_first_rows_shows_both_rows_and_keeps_the_app():
    # Rows past the first ones are added after a frame, outside the refresh's worker: a repeated key there
    # (DataTable's DuplicateKey) would end the app rather than one panel.
    sample = _sample()
    nodes = list(sample.nodes)
    nodes[FIRST_ROWS + 50] = nodes[FIRST_ROWS + 50].model_copy(update={"name": nodes[FIRST_ROWS + 49].name})
    app = _app([sample.model_copy(update={"nodes": nodes})])
    async with app.run_test(size=(160, 50)) as pilot:
        await _filled(app, pilot)
        names = _names(app)
        assert len(names) == NODES and names.count(nodes[FIRST_ROWS + 49].name) == 2
        assert app.is_running


async def test_enter_before_the_row_of_the_node_come_back_from_opens_that_node(catalog):
    # Back from a node's screen whose row comes after the first rows, with the table being filled again: `enter`
    # pressed meanwhile opens the node the cursor is on, not the first row's.
    opened: list[str] = []
    app = _app([_sample()], open_node=_opener(opened, catalog))
    async with app.run_test(size=(160, 50)) as pilot:
        await _filled(app, pilot)
        await _there_and_back(app, pilot, "node-320")
        _fleet(app)._fill("nodes", node_table(_sample(), []))  # its first rows, and the cursor's, only
        _fleet(app).action_open_node()
        await pilot.pause()
    assert opened == ["node-320", "node-320"]
