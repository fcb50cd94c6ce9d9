"""VictoriaMetrics scraping live exporters (`gpumem-tui export --demo SCENARIO` on loopback, with
`-promscrape.config`) beside a real Prometheus scraping the same ones: `fleet check` and `fleet snapshot` give
the same answers; and with VictoriaMetrics' default `-search.latencyOffset` (30 s) the data age says the server
holds its newest samples back, where a node would otherwise look fresh while 30 s old, or be absent."""

from __future__ import annotations

import asyncio
import json
import re
import time
from contextlib import ExitStack
from typing import Any

import pytest

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.held_back import PROBE
from gpumem_tui.sources.prometheus.node_feed import read_node
from gpumem_tui.sources.prometheus.node_history import NodeHistoryReader
from gpumem_tui.sources.prometheus.node_queries import NodeQueries
from gpumem_tui.sources.prometheus.node_sample import node_sample
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.export.exporter import demo_exporters
from tests.sources.prometheus.asked import asked
from tests.sources.prometheus.server import require_prometheus, running, scrape_config
from tests.sources.prometheus.victoria import require_victoria_metrics, victoria

pytestmark = pytest.mark.prometheus

NODES = {"node-1": ("noisy-neighbour", 48), "node-3": ("healthy-8b", 90)}
"""NODE_NAME of each exporter: (scenario, moment), as tests/export/test_fleet_end_to_end.py runs them."""
HELD_BACK_S = 30.0
"""VictoriaMetrics' default -search.latencyOffset."""
MOMENT = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
AGE = re.compile(r"data age [^;]*")


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """(Prometheus, VictoriaMetrics with a 1 s latency offset, VictoriaMetrics at its default), all scraping
    the same exporters every second, started together: the default one is read first, within its 30 s."""
    require_prometheus()
    require_victoria_metrics()
    where = tmp_path_factory.mktemp("live")
    with ExitStack() as stack:
        targets = demo_exporters(stack, NODES)
        config = scrape_config(where, targets)
        held = stack.enter_context(victoria(where / "held", config, latency_offset=None))
        prometheus = stack.enter_context(running(where / "prometheus", config=config))
        quick = stack.enter_context(victoria(where / "quick", config))
        yield prometheus, quick, held


def _check(capsys, url: str, *argv: str) -> tuple[int, dict]:
    code = main(["fleet", *argv, "--prometheus", url, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _until_seen(capsys, url: str) -> list[dict]:
    """`fleet check` until it has every node with its engine (each answer kept); fails after 90 s."""
    answers = []
    deadline = time.monotonic() + 90
    while not answers or min(answers[-1]["coverage"][k] for k in ("nodes", "joined")) < len(NODES):
        assert time.monotonic() < deadline, f"{url} shows {answers[-1]['coverage']} after 90 s"
        answers.append(_check(capsys, url, "check")[1])
    return answers


def _normal(value: Any, url: str) -> Any:
    """What must differ between two servers read a moment apart: the time read (each read's own), the data's
    age as each server counts it (their scrapes are not in step; `exporter_nodes` holds each exporter's age),
    and the server's URL."""
    if isinstance(value, str):
        return AGE.sub("data age A", MOMENT.sub("T", value.replace(url, "URL")))
    if isinstance(value, list):
        return [_normal(v, url) for v in value]
    if isinstance(value, dict):
        moving = ("timestamp", "evaluated_at", "data_age_s", "held_back_s", "join_age_s", "exporter_nodes")
        return {k: "X" if k in moving else _normal(v, url) for k, v in value.items()}
    return value


def test_the_data_age_says_what_the_server_holds_back(servers, capsys):
    """Until the first scrape is 30 s old the fleet is empty and says why; then every node is there, its data
    30 s older than the server's own ages say, and none of them stale. The module's first test: its first read
    comes as the servers start, not after another test's wait (which under load took past the 30 s)."""
    *_, held = servers
    main(["fleet", "check", "--prometheus", held])
    first = capsys.readouterr().out.splitlines()[0]
    answers = _until_seen(capsys, held)
    hidden = [a for a in answers if a["coverage"]["nodes"] == 0]
    assert hidden, "the first read came 30 s after the first scrape"
    assert {a["held_back_s"] for a in answers} == {HELD_BACK_S}
    # read before the hidden ones, so hidden too
    assert first == (
        "UNKNOWN - no node and no engine within the hour (no dcgm-exporter series match the selector as of 30 s "
        "ago); 0 nodes, 0 GPUs, 0 engines, 0 joined; data age unknown: the server answers as of 30 s ago "
        "(VictoriaMetrics' -search.latencyOffset), so a node that began reporting since is not shown yet"
    )
    seen = answers[-1]
    assert not [f for f in seen["findings"] if f["code"] == "source_stale"]
    assert main(["fleet", "check", "--prometheus", held]) == seen["exit_code"]
    line = capsys.readouterr().out.splitlines()[0]
    age = re.search(r"data age (\d+) s, 30 s of it held back: the server answers as of 30 s ago \(Vic", line)
    assert age and int(age.group(1)) >= HELD_BACK_S, line


def test_fleet_check_and_snapshot_say_the_same_over_both(servers, capsys):
    prometheus, quick, _ = servers
    _until_seen(capsys, prometheus), _until_seen(capsys, quick)
    for argv in (("check",), ("snapshot",)):
        ours = {url: _check(capsys, url, *argv) for url in (prometheus, quick)}
        first, second = [(code, _normal(answer, url)) for url, (code, answer) in ours.items()]
        assert first == second
    assert ours[prometheus][1]["coverage"] == {"nodes": 2, "gpus": 2, "engines": 2, "joined": 2, "not_joined": 0}


def test_a_node_over_the_held_back_server_says_what_prometheus_says(servers, capsys):
    """`check --prometheus URL --node N` over VictoriaMetrics at its default offset: once the node is 30 s
    old there, the same verdict and findings as over Prometheus (the node's sample as of 30 s before)."""
    prometheus, _, held = servers
    _until_seen(capsys, held)
    for node in NODES:
        said = {}
        for url in (prometheus, held):
            code = main(["check", "--prometheus", url, "--node", node, "--json"])
            said[url] = (code, _normal(json.loads(capsys.readouterr().out), url))
        assert said[prometheus] == said[held]


def _asked(url: str, read) -> tuple[list[tuple[str, float]], list[float]]:
    return asyncio.run(asked(url, read))


@pytest.mark.parametrize("read", ["fleet", "node"])
def test_every_query_of_a_read_is_asked_at_the_moment_the_held_back_server_answers_as_of(servers, read):
    """The server moves a query asked at now back from its own arrival: asked at now, the queries of one read
    would each see their own moment (a node's first scrape in one answer, its findings missing from another).
    Each read asks the probe first, then every query at the moment the probe was answered as of, 30 s back."""
    *_, held = servers
    now = time.time()
    if read == "fleet":
        reader = FleetReader(Queries(look=0.1), FleetRules())
        asked, probed = _asked(held, lambda client: reader.read(client, now))
    else:
        asked, probed = _asked(held, lambda client: read_node(client, NodeQueries("node-1"), now, FleetRules().stale))
    assert asked[0] == (PROBE, now) and len(probed) == 1
    assert probed[0] == pytest.approx(now - HELD_BACK_S, abs=5)
    assert len(asked) > 5 and {at for _, at in asked[1:]} == {probed[0]}


def test_the_node_read_says_the_server_holds_back_and_dates_its_sample_as_old_as_it_is(servers, capsys):
    """The node's screen over the held-back server: its sample is dated when the node's data was taken (30 s and
    more before now, as the fleet's data age says), and its notes say why, in the fleet's words; over Prometheus
    neither."""
    prometheus, _, held = servers
    _until_seen(capsys, held)
    said = {}
    for url in (prometheus, held):
        now = time.time()
        read = asyncio.run(_node(url, now))
        sample = node_sample(read, "node-1")
        notes = [e.message for e in sample.errors if "answers as of" in e.message]
        said[url] = (now - sample.timestamp, notes, read.fleet.held_back_s)
    age, notes, held_back = said[held]
    assert held_back == HELD_BACK_S and age >= HELD_BACK_S
    assert notes == [
        "the server answers as of 30 s ago (VictoriaMetrics' -search.latencyOffset): the node's data is that much older"
    ]
    age, notes, held_back = said[prometheus]
    assert (notes, held_back) == ([], 0.0) and age < HELD_BACK_S


async def _node(url: str, at: float):
    async with PrometheusClient(Connection(url)) as client:
        return await read_node(client, NodeQueries("node-1"), at, FleetRules().stale)


def test_the_node_history_ends_where_the_server_answers_as_of(servers, capsys):
    """The node screen's history (`f`, read to now): over the held-back server it ends 30 s back, at the moment
    the node read is asked at, not at now, whose last 30 s the server does not hold yet; over Prometheus at now."""
    prometheus, _, held = servers
    _until_seen(capsys, held)
    for url, back in ((prometheus, 0.0), (held, HELD_BACK_S)):
        now = time.time()
        history = NodeHistoryReader(Connection(url), "node-1", span_s=60.0, stale=FleetRules().stale).read()
        assert now - back - 2 <= history.end <= time.time() - back, (url, now - history.end)
