"""The probe of how far behind the time asked a server answers (held_back.py), behind a proxy that spoils its
answer on the way to a real Prometheus: a spoilt answer never moves the read nor loses it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gpumem_tui.cli import main
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.query_api import Api, serving

pytestmark = pytest.mark.prometheus
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
