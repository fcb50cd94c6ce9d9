"""The overview read (`fleet check`, the fleet screen): node figures summed on the server and GPUs read one
by one only where they need a look, judged the same as the full read `fleet snapshot` makes."""

from __future__ import annotations

import asyncio
import json

import pytest

from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.fleet import judge_fleet
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.fleet import read_fleet
from gpumem_tui.sources.prometheus.queries import Queries
from tests.sources.prometheus.conftest import AT

pytestmark = pytest.mark.prometheus
LOOK = Thresholds().headroom_warning_fraction


def _read(url: str, queries: Queries, at: float = AT):
    async def read():
        async with PrometheusClient(Connection(url)) as client:
            return await read_fleet(client, queries, at)

    return asyncio.run(read())


def _said(sample) -> list[tuple]:
    return [(f.node, f.finding.severity, f.finding.code, f.finding.title) for f in judge_fleet(sample)]


@pytest.mark.parametrize("at", [AT, AT - 70])
def test_the_overview_judges_as_the_full_read(fleet_url, at):
    full, overview = _read(fleet_url, Queries(), at), _read(fleet_url, Queries(look=LOOK), at)
    assert _said(overview) == _said(full)
    assert overview.nodes == full.nodes and overview.coverage == full.coverage
    assert [(e.name, e.node, e.joined, e.gpu_count) for e in overview.engines] == [
        (e.name, e.node, e.joined, e.gpu_count) for e in full.engines
    ]


def test_the_overview_reads_one_by_one_only_the_gpus_that_need_a_look(fleet_url):
    full, overview = _read(fleet_url, Queries()), _read(fleet_url, Queries(look=LOOK))
    looked = {(g.node, g.uuid) for g in overview.gpus}
    assert looked < {(g.node, g.uuid) for g in full.gpus}
    needed = {
        (g.node, g.uuid)
        for g in full.gpus
        if g.free_bytes is None or g.total_bytes is None or g.free_bytes < LOOK * g.total_bytes
    }
    assert looked == needed
    assert not any(g.node == "node-f" for g in overview.gpus)  # eight idle GPUs: nothing to look at
    assert sum(n.gpus for n in overview.nodes) == len(full.gpus)


def test_check_overview_says_what_the_full_check_says(fleet_url, capsys):
    from gpumem_tui.cli import main

    argv = ["fleet", "check", "--prometheus", fleet_url, "--at", str(AT), "--json"]
    full_code = main(argv)
    full = json.loads(capsys.readouterr().out)
    overview_code = main([*argv, "--overview"])
    overview = json.loads(capsys.readouterr().out)
    assert overview_code == full_code == 2
    assert overview["findings"] == full["findings"] and overview["coverage"] == full["coverage"]
