"""The first screen of `gpumem-tui fleet --demo` at 80x24, 100x30 and 160x48: the line under the header is the
fleet's verdict in `fleet check`'s words, and the worst nodes come before the history's sparklines, the models
table and the "unknown, because" notes."""

from __future__ import annotations

import asyncio
import contextlib
import io
import threading

import pytest
from textual.widgets import DataTable

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.fleet import Fleet, FleetScreen
from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli import main
from gpumem_tui.cli.fleet_screen import demo_history, demo_reader
from gpumem_tui.demo.fleet_answers import DEMO_FLEET, DEMO_SOURCE
from gpumem_tui.diagnosis.fleet.plans import plan_fleet
from tests.app.screen_text import screen_text


@pytest.fixture(scope="module")
def verdict() -> str:
    """`fleet check --demo`'s first line, less the coverage the screen's header says."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", "check", "--demo"]) == 2
    return out.getvalue().splitlines()[0].split("; ")[0]


def _line_of(lines: list[str], *words: str) -> int:
    """The first line holding any of the words (past the end where none does)."""
    return next((i for i, line in enumerate(lines) if any(w in line for w in words)), len(lines))


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 48)])
async def test_the_verdict_then_the_worst_nodes_first(size, verdict):
    reader = demo_reader(plan=lambda sample: plan_fleet(sample, load_catalog()))
    app = GpuMemApp.of_fleet(Fleet(reader, DEMO_SOURCE, poll=False, read_history=demo_history(3600)))
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.pause()
        fleet = app.screen
        assert fleet.sample is not None and fleet.history is not None
        lines = [line.strip("▁▂▃▄▅▆▇█▎▏▕ ") for line in screen_text(app)]
        header = _line_of(lines, "data age")
        assert lines[header + 1].startswith(verdict.split(": ")[0]), lines[: header + 3]
        assert " ".join(lines[header + 1 : header + 3]).startswith(verdict[: size[0] - 4])
        worst = _line_of(lines, "node-c ")  # the critical node (engine_down) heads the node table
        assert worst < len(lines) - 1, "\n".join(lines)  # on the first screen, above the footer
        assert worst < _line_of(lines, "GPU memory used", "KV cache, fullest"), "\n".join(lines)
        assert worst < _line_of(lines, "Models"), "\n".join(lines)
        assert worst < _line_of(lines, "unknown, because"), "\n".join(lines)
        assert "state ok" not in " ".join(lines)  # the source's state is not the fleet's verdict


async def test_the_demo_draws_its_node_rows_before_its_history_is_read():
    """`fleet --demo`: the node rows are painted from the first read alone; the history line (the simulated
    run's range answers) fills in after. The history is held here until a frame with the rows is painted: were
    the rows to wait for it, it would give up waiting and the test fail."""
    painted = threading.Event()
    waited: list[bool] = []

    class Watching(FleetScreen):
        def _more_rows(self, name, filling, count) -> None:
            super()._more_rows(name, filling, count)
            if name == "nodes" and self.query_one("#fleet-nodes", DataTable).row_count:
                self.call_after_refresh(painted.set)

    class Watched(GpuMemApp):
        def first_screen(self) -> FleetScreen:
            return Watching(self.fleet, self.glyphs)

    history = demo_history(3600)

    async def held(at: float):
        waited.append(await asyncio.to_thread(painted.wait, 60))
        return await history(at)

    reader = demo_reader(plan=lambda sample: plan_fleet(sample, load_catalog()))
    app = Watched(fleet=Fleet(reader, DEMO_SOURCE, poll=False, read_history=held))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        fleet = app.screen
        assert waited == [True], "the history was read before the node rows were painted"
        assert fleet.history is not None and fleet.history_failure is None
        assert fleet.query_one("#fleet-nodes", DataTable).row_count == len(DEMO_FLEET)
