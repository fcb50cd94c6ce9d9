"""A slow but healthy Prometheus (a Thanos far away): every answer comes well within a request's deadline,
yet asked one after another the read would outlast its refresh's cap. The fleet's refresh, its history and a
node's history read it whole, as they read the server directly, and none is said as a hang; where the cap is
too short for the history's rounds, the read says it was cut. The real Prometheus of the tests answers behind
the fake query API as a proxy that waits before each answer; the client's deadlines are scaled down through
its options (nothing here asserts a wall-clock time)."""

from __future__ import annotations

import asyncio

import pytest

from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, PrometheusError
from gpumem_tui.sources.prometheus.history import read_history
from gpumem_tui.sources.prometheus.node_history import read_node_history
from gpumem_tui.sources.prometheus.node_queries import NodeQueries
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.query_api import Api, serving

pytestmark = pytest.mark.prometheus
DELAY_S = 0.8
"""Each answer's wait: a fifth of a request's deadline below."""


def _client(url: str, **options) -> PrometheusClient:
    """A request's deadline 0.5 + 2.5 + 1 = 4 s; the refresh's 3 of them, 12 s."""
    return PrometheusClient(Connection(url), connect_timeout_s=0.5, query_timeout_s=0.5, **options)


def _read(url: str, what, **options):
    async def read():
        async with _client(url, **options) as client:
            return await what(client), client.refresh_s

    return asyncio.run(read())


def _fleet(client: PrometheusClient):
    return FleetReader(Queries(), FleetRules()).read(client, AT)


def _history(client: PrometheusClient):
    return read_history(client, Queries(), AT, 120.0)


def _node_history(client: PrometheusClient):
    return read_node_history(client, NodeQueries("node-c"), AT, 120.0, FleetRules().stale)


def test_a_slow_server_s_fleet_refresh_is_read_whole_never_a_hang(fleet_url):
    api = Api(upstream=fleet_url, delay_s=DELAY_S)
    with serving(api) as url:
        slow, cap = _read(url, _fleet)
    direct, _ = _read(fleet_url, _fleet)
    assert DELAY_S * len(api.asked) > cap, (len(api.asked), cap)  # asked one by one, it would not fit its cap
    assert slow.error is None and "did not answer in time" not in slow.model_dump_json()
    assert slow.model_copy(update={"source": direct.source}) == direct


@pytest.mark.parametrize("what", [_history, _node_history], ids=["fleet history", "node history"])
def test_a_slow_server_s_history_fits_the_refresh_s_cap(fleet_url, what):
    with serving(Api(upstream=fleet_url, delay_s=DELAY_S)) as url:
        slow, _ = _read(url, what)
    direct, _ = _read(fleet_url, what)
    assert slow == direct and (direct.samples if what is _node_history else direct.series)


@pytest.mark.parametrize("what", [_history, _node_history], ids=["fleet history", "node history"])
def test_a_history_past_the_refresh_s_cap_says_it_was_cut(fleet_url, what):
    """The cap made shorter than one answer's wait: the read ends at it and says so, in one line."""
    with serving(Api(upstream=fleet_url, delay_s=DELAY_S)) as url, pytest.raises(PrometheusError) as failure:
        _read(url, what, refresh_s=DELAY_S / 2)
    assert failure.value.kind == "hang"
    assert f"the read was not done within {DELAY_S / 2:g} s (a slow or hung server)" in str(failure.value)
