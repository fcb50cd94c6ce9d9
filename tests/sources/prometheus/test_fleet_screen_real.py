"""The fleet screen over a real Prometheus (conftest's backfilled fleet): the reader `fleet --prometheus`
uses, the header's coverage, and a node whose exporter wrote NaN shown as unknown with its reason."""

from __future__ import annotations

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.fleet import Fleet
from gpumem_tui.cli.fleet_screen import prometheus_reader
from gpumem_tui.sources.prometheus.client import Connection
from gpumem_tui.sources.prometheus.queries import Queries
from tests.app.screen_text import screen_text
from tests.app.waiting import until
from tests.sources.prometheus.conftest import AT

pytestmark = pytest.mark.prometheus


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
        assert rows["node-nan"][3] == "unknown"  # FB_USED NaN: never a number, never fine
        assert "used (node-nan): unknown, because dcgm-exporter reported FB_USED on a GPU as NaN: no reading" in text
