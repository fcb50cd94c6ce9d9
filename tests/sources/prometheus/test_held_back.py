"""The probe of how far behind the time asked a server answers (held_back.py), behind a proxy that spoils its
answer on the way to a real Prometheus: a spoilt answer never moves the read nor loses it, and one that failed
keeps the hold-back already measured, so the reads after it still ask every query at one moment."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.held_back import PROBE
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.sources.prometheus.asked import asked
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.query_api import Api, serving

pytestmark = pytest.mark.prometheus
HELD_S = 30.0
"""The hold-back the proxy makes the probe say (VictoriaMetrics' default -search.latencyOffset)."""
Items = list[dict[str, Any]]
READS = (
    ["fleet", "check"],
    ["fleet", "check", "--json"],
    ["fleet", "snapshot", "--json"],
    ["check", "--node", "node-a"],
)


def _probe(answer: Callable[[float], Items]) -> Callable[[Items], Items]:
    """A proxy's spoiler of the probe's answer alone: `answer` of the time it was evaluated at. The probe's is
    the one answer of a single series without labels whose value is its own time stamp."""

    def corrupt(items: Items) -> Items:
        if len(items) != 1 or items[0]["metric"] or float(items[0]["value"][1]) != items[0]["value"][0]:
            return items
        return answer(items[0]["value"][0])

    return corrupt


def _said(capsys, url: str, argv: list[str]) -> tuple[int, str]:
    code = main([*argv, "--prometheus", url, "--at", str(AT)])
    return code, capsys.readouterr().out.replace(url, "URL")


@pytest.mark.parametrize("value", ["0", "-5", "-1e300", str(AT - 2 * 86400)])
def test_a_spoilt_probe_answer_leaves_every_query_at_the_time_asked(fleet_url, capsys, value):
    """A probe answer further back than any hold-back (a clock of 1970, two days back) moved the whole read
    there: an empty fleet (UNKNOWN, the node not found) said to be held back 55 years, or a crash writing
    the moment. Spoilt, it is not believed: the read is the server's at the time asked."""
    spoil = _probe(lambda t: [{"metric": {}, "value": [t, value]}])
    with serving(Api(corrupt=spoil, upstream=fleet_url)) as url:
        for argv in READS:
            assert _said(capsys, url, argv) == _said(capsys, fleet_url, argv), argv
    code, out = _said(capsys, fleet_url, ["fleet", "check", "--json"])
    check = json.loads(out)
    assert (code, check["coverage"]["nodes"], check["evaluated_at"], check["held_back_s"]) == (2, 9, AT, 0)


def test_a_failed_probe_keeps_the_hold_back_measured_and_the_next_read_asks_it_again(fleet_url):
    """The proxy's probe answers HELD_S behind (as VictoriaMetrics' does), but fails once, in the read where
    the hold-back is due to be measured again. The reads after it still probe and ask every query at the moment
    the probe says: a failed probe taken for no hold-back asked them at the time asked for 5 min, where the
    server moves each query back from its own arrival."""
    spoilt: list[bool] = []
    held = _probe(lambda t: [] if spoilt else [{"metric": {}, "value": [t, str(t - HELD_S)]}])
    reader = FleetReader(Queries(look=0.1), FleetRules(), facts_every_s=20)
    samples = []

    async def read(client, at: float) -> None:
        samples.append(await reader.read(client, at))

    with serving(Api(corrupt=held, upstream=fleet_url)) as url:
        first, _ = asyncio.run(asked(url, lambda client: read(client, AT - 60)))
        spoilt.append(True)
        asyncio.run(asked(url, lambda client: read(client, AT - 30)))  # due: 20 s since the first probe
        spoilt.clear()
        later, probed = asyncio.run(asked(url, lambda client: read(client, AT - 20)))
    assert first[0] == (PROBE, AT - 60) and {at for _, at in first[1:]} == {AT - 60 - HELD_S}
    assert [s.held_back_s for s in samples] == [HELD_S] * 3
    assert later[0] == (PROBE, AT - 20) and probed == [AT - 20 - HELD_S]
    assert {at for _, at in later[1:]} == {AT - 20 - HELD_S}
