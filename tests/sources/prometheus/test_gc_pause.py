"""The collector while a fleet is read: paused inside a read (nesting, and on again after), and a reader
that lives across refreshes lets the young generation grow before collecting (never lowering a threshold
someone set higher)."""

from __future__ import annotations

import gc

from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.gc_pause import YOUNG, paused_gc, roomy
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FleetReader


def test_a_pause_nests_and_the_collector_is_on_again_after():
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause found it off: it leaves it off
    assert gc.isenabled()


def test_a_fleet_reader_raises_the_young_generation_s_threshold_and_never_lowers_one():
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        FleetReader(Queries(look=0.1), FleetRules())
        assert gc.get_threshold() == (YOUNG, 10, 10)
        gc.set_threshold(YOUNG * 2, 5, 5)
        roomy()
        assert gc.get_threshold() == (YOUNG * 2, 5, 5)
    finally:
        gc.set_threshold(*before)


def test_a_fleet_read_pauses_the_collector_while_it_awaits_its_answers(fleet_url):
    """Over the whole read, awaits included: the collector is off while the answers come (seen by a client
    that looks as each query goes out) and on again after."""
    import asyncio

    from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
    from tests.sources.prometheus.conftest import AT

    seen: list[bool] = []

    class Looking(PrometheusClient):
        async def query(self, promql: str, at: float):
            seen.append(gc.isenabled())
            return await super().query(promql, at)

    async def read():
        async with Looking(Connection(fleet_url)) as client:
            await FleetReader(Queries(look=0.1), FleetRules()).read(client, AT)

    asyncio.run(read())
    assert seen and not any(seen)
    assert gc.isenabled()
