"""The fleet screen over a real Prometheus (conftest's backfilled fleet): the reader `fleet --prometheus`
uses, the header's coverage, a node whose exporter wrote NaN shown as unknown with its reason, and the first
frame a first look, the whole picture at once after it."""

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
from gpumem_tui.cli import fleet_screen, main
from gpumem_tui.cli.fleet_screen import prometheus_reader
from gpumem_tui.diagnosis.fleet.plans import plan_fleet
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, Result
from gpumem_tui.sources.prometheus.queries import Queries
from tests.app.screen_text import screen_text
from tests.app.waiting import until
from tests.sources.prometheus.conftest import AT

pytestmark = pytest.mark.prometheus
OVERVIEW = Queries(look=0.1)
"""The fleet screen's read unless --full (the headroom warning fraction)."""


async def test_fleet_screen_on_a_real_prometheus(fleet_url):
    app = GpuMemApp.of_fleet(Fleet(prometheus_reader(Connection(fleet_url), Queries(), AT, 10), fleet_url, poll=False))
    async with app.run_test(size=(160, 60)) as pilot:
        fleet = app.screen
        await until(pilot, lambda: fleet.sample is not None or fleet.failure is not None)
        assert fleet.failure is None, fleet.failure
        text = " ".join(" ".join(screen_text(app)).split())
        assert "9 nodes, 25 GPUs, 12 engines, 12 joined; data age" in text and "source ok" in text
        table = fleet.query_one("#fleet-nodes")
        rows = {str(table.get_row_at(i)[0]): [str(c) for c in table.get_row_at(i)] for i in range(table.row_count)}
        used = [str(column.label) for column in table.columns.values()].index("Used")
        assert rows["node-nan"][used] == "unknown"  # FB_USED NaN: never a number, never fine
        assert "used (node-nan): unknown, because dcgm-exporter reported FB_USED on a GPU as NaN: no reading" in text


@pytest.fixture(scope="module")
def checked(fleet_url) -> str:
    """`fleet check`'s first line at AT: its verdict, then the coverage."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fleet", "check", "--prometheus", fleet_url, "--at", str(AT)]) == 2
    return out.getvalue().splitlines()[0]


async def test_the_first_frame_is_a_first_look_and_the_whole_picture_follows_at_once(fleet_url, checked, monkeypatch):
    """The screen as `gpumem-tui fleet --prometheus URL` makes it (the overview, each sample planned): its first
    frame is drawn before the costly slow facts are asked (they are held here until that frame is painted: were the
    screen to wait for them, they would give up waiting and the test fail), says what is still being read and that
    it is a first look; the whole picture follows without an interval (the screen does not poll here), and its
    verdict is `fleet check`'s."""
    painted, held, frames = threading.Event(), [], []
    later = {OVERVIEW.gpu_pods, OVERVIEW.nodes_seen, OVERVIEW.exporters_seen, OVERVIEW.engines, OVERVIEW.pools}

    class Held(PrometheusClient):
        async def query(self, promql: str, at: float) -> Result:
            if promql in later:
                held.append(await asyncio.to_thread(painted.wait, 60))
            return await super().query(promql, at)

    class Watching(FleetScreen):
        def _draw(self) -> None:
            super()._draw()
            if self.sample is not None:
                nodes, models = self.query_one("#fleet-nodes", DataTable), self.query_one("#fleet-models", DataTable)
                row = [str(cell) for cell in nodes.get_row_at(0)] if nodes.row_count else []
                said = (self.header().plain, self.verdict().plain, row, models.row_count, self.notes([]).plain)
                frames.append((list(self.sample.reading), *said))
                if self.sample.reading:
                    self.call_after_refresh(painted.set)

    class Watched(GpuMemApp):
        def first_screen(self) -> FleetScreen:
            return Watching(self.fleet, self.glyphs)

    monkeypatch.setattr(fleet_screen, "PrometheusClient", Held)
    planned = lambda sample: plan_fleet(sample, load_catalog())  # noqa: E731 - as `fleet` plans each sample
    read = prometheus_reader(Connection(fleet_url), OVERVIEW, AT, 10, planned)
    app = Watched(fleet=Fleet(read, fleet_url, poll=False))
    async with app.run_test(size=(160, 60)) as pilot:
        screen = app.screen
        await until(
            pilot, lambda: screen.failure is not None or (screen.sample is not None and not screen.sample.reading)
        )
        assert screen.failure is None, screen.failure
        await pilot.pause()
        nodes = screen.query_one("#fleet-nodes", DataTable)
        assert (nodes.cursor_row, str(nodes.get_row_at(0)[0])) == (0, "node-c")  # the worst node: not the first
        # look's top row (node-h), which the cursor sat on untouched
    assert held and all(held)  # every costly fact asked once the first look was on screen, none before
    (reading, header, said, row, models, _), *_, (rest, whole_header, whole, _, whole_models, _) = frames
    assert reading and rest == [] and len(frames) == 2
    assert (
        "9 nodes, 25 GPUs; reading which pods hold which GPUs, which nodes reported in the hour, the engines" in header
    )
    assert said.startswith("first look - CRITICAL - ") and said.endswith(
        "memory, engines and plans are judged when the rest is read"
    )
    assert row[0] == "node-h" and row[-1] == "reading"  # its own exporter's findings; the join still read
    assert models == 0 and whole_models > 0
    assert "12 joined" in whole_header and checked.startswith(f"{whole}; ")
