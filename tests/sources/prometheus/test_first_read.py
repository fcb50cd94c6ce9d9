"""The overview's first read (the fleet screen's first frame, `fleet check`): no query waits for another
without need, and it reads what a later refresh at the same moment reads. Over the test fleet's real
Prometheus, without the rules' series (`fleet_url`) and with them (`recorded_url`)."""

from __future__ import annotations

import asyncio

import pytest

from gpumem_tui.diagnosis.fleet.judge import judge_fleet, verdict
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, PrometheusError, Result
from gpumem_tui.sources.prometheus.held_back import PROBE
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.query_table import TABLE
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.sources.prometheus.conftest import AT

pytestmark = pytest.mark.prometheus
OVERVIEW = Queries(look=0.1)
RECORDED_LOW = Queries(look=0.1, rules=True).node_low({})
"""The count of GPUs under the fraction, from the rules' series: no bound in it."""
INDEPENDENT = (
    "nodes_age",
    "engines",
    "sleeping",
    "preemptions",
    "node_findings",
    "targets_down",
    "gpu_pods",
    "gpu_instances",
    "nodes_seen",
    "exporters_seen",
    "pools",
)
"""The first read's queries whose form does not depend on whether the server has the rules' series."""
LATER = {
    *(TABLE[name].promql(OVERVIEW) for name in ("gpu_pods", "nodes_seen", "exporters_seen", "targets_down")),
    *(TABLE[name].promql(OVERVIEW) for name in ("engines", "waiting", "sleeping", "swapped", "preemptions", "pools")),
    OVERVIEW.engine_counters,
}
"""What a first look (the fleet screen's first frame) leaves to the read after it: the costly slow facts and the
engines'."""


class Recording(PrometheusClient):
    """Logs each query when it is sent and when its answer is back; a query in `slow` is answered `delay_s`
    late, one in `failing` fails as a server that rejects it, and the label API fails where `no_labels`."""

    def __init__(
        self,
        connection: Connection,
        slow: tuple[str, ...] = (),
        delay_s: float = 0.0,
        failing: tuple[str, ...] = (),
        no_labels: bool = False,
    ) -> None:
        super().__init__(connection)
        self.log: list[tuple[str, str]] = []
        self.slow, self.delay_s, self.failing, self.no_labels = slow, delay_s, failing, no_labels

    async def query(self, promql: str, at: float) -> Result:
        self.log.append(("sent", promql))
        try:
            if promql in self.failing:
                raise PrometheusError(f"{self.connection.url}/api/v1/query: bad_data: rejected here", "query")
            return await super().query(promql, at)
        finally:
            if promql in self.slow:
                await asyncio.sleep(self.delay_s)
            self.log.append(("answered", promql))

    async def label_values(self, label: str, selector: str, start: float, end: float) -> list[str]:
        if self.no_labels:
            raise PrometheusError(f"{self.connection.url}/api/v1/label/{label}/values: HTTP 404 Not Found", "down")
        return await super().label_values(label, selector, start, end)


def _first(url: str, reader: FleetReader | None = None, at: float = AT, **recording):
    reader = reader or FleetReader(OVERVIEW, FleetRules())

    async def read():
        async with Recording(Connection(url), **recording) as client:
            return await reader.read(client, at), client.log

    return asyncio.run(read())


def _sent(log: list[tuple[str, str]]) -> list[str]:
    return [promql for what, promql in log if what == "sent"]


@pytest.mark.parametrize("server", ["fleet_url", "recorded_url"])
def test_what_does_not_depend_on_the_rules_is_sent_before_any_answer(server, request):
    """Before any answer but the probe's, which goes first: the moment every query is asked at (held_back.py)."""
    _, log = _first(request.getfixturevalue(server))
    assert log[:2] == [("sent", PROBE), ("answered", PROBE)]
    log = log[2:]
    first_answer = next(i for i, (what, _) in enumerate(log) if what == "answered")
    sent_first = {promql for _, promql in log[:first_answer]}
    assert [name for name in INDEPENDENT if TABLE[name].promql(OVERVIEW) not in sent_first] == []


@pytest.mark.parametrize(("server", "recorded"), [("fleet_url", False), ("recorded_url", True)])
def test_the_count_under_the_fraction_goes_out_when_the_totals_answer(server, recorded, request):
    """The join (gpu_pods) answers a second late here: the count does not wait for it, as it needs only the
    cards' totals; it is made from the rules' series where the server has them (which count each GPU against
    its own total, so it goes out before the totals answer), else from the raw ones."""
    sample, log = _first(request.getfixturevalue(server), slow=(OVERVIEW.gpu_pods,), delay_s=1.0)
    low = [i for i, (what, promql) in enumerate(log) if what == "sent" and (" < " in promql or promql == RECORDED_LOW)]
    join_answered = log.index(("answered", OVERVIEW.gpu_pods))
    assert len(low) == 1 and low[0] < join_answered
    assert (log[low[0]][1] == RECORDED_LOW) is recorded
    if recorded:
        assert low[0] < log.index(("answered", Queries(look=0.1, rules=True).card_totals))
    assert sample.node_figures_from == ("recording rules" if recorded else "raw series")


@pytest.mark.parametrize(("server", "recorded"), [("fleet_url", False), ("recorded_url", True)])
def test_the_first_read_reads_the_recorded_series_only_where_the_server_has_them(server, recorded, request):
    sample, log = _first(request.getfixturevalue(server))
    figures = [p for p in _sent(log) if p in {OVERVIEW.node_memory, OVERVIEW.node_gpus, OVERVIEW.card_totals}]
    assert sample.node_figures_from == ("recording rules" if recorded else "raw series")
    assert (figures == []) is recorded  # the raw sums of every GPU's series: never asked where the rules are


def test_a_server_without_the_rules_is_not_asked_which_nodes_they_record(fleet_url):
    """Which nodes the rules leave unrecorded selects every GPU's series: asked only where the rules' names are
    there (as they are on `recorded_url`, where it is asked)."""
    _, log = _first(fleet_url)
    assert [p for p in _sent(log) if '"unrecorded"' in p] == []


def test_where_the_rules_are_which_nodes_they_cover_is_told_from_what_the_read_asks_anyway(recorded_url):
    """The data ages name the nodes that report, the recorded GPU counts those the rules record: the server's
    own check (a select of every GPU's series) is not asked, and the reader keeps what it would have said."""
    reader = FleetReader(OVERVIEW, FleetRules())
    sample, log = _first(recorded_url, reader)
    assert OVERVIEW.rules_named in _sent(log) and OVERVIEW.rules_present not in _sent(log)
    assert sample.node_figures_from == "recording rules" and reader.facts is not None and reader.facts.rules


def test_where_the_data_ages_fail_the_server_says_which_nodes_the_rules_cover(recorded_url):
    sample, log = _first(recorded_url, failing=(OVERVIEW.nodes_age,))
    assert OVERVIEW.rules_present in _sent(log)
    assert sample.node_figures_from == "recording rules"


@pytest.mark.parametrize("server", ["fleet_url", "recorded_url"])
def test_the_first_read_and_a_refresh_at_the_same_moment_give_one_sample(server, request):
    """The first read asks in its own order; a refresh at the same moment, on the facts it kept, answers the
    same: the fleet screen's first frame is the fleet as `fleet check` and later refreshes read it."""
    url = request.getfixturevalue(server)
    reader = FleetReader(OVERVIEW, FleetRules())
    first, _ = _first(url, reader)
    again, log = _first(url, reader)
    assert OVERVIEW.gpu_pods not in _sent(log)  # the refresh kept the facts: not a second first read
    assert again == first


@pytest.mark.parametrize("server", ["fleet_url", "recorded_url"])
def test_a_failed_card_totals_leaves_the_count_unread_and_says_why(server, request):
    reader = FleetReader(OVERVIEW, FleetRules())
    url = request.getfixturevalue(server)
    totals = (OVERVIEW.card_totals, Queries(look=0.1, rules=True).card_totals)
    sample, log = _first(url, reader, failing=totals)
    assert [p for p in _sent(log) if " < " in p] == []
    assert sample.state == "stale" and "bad_data: rejected here" in (sample.error or "")
    assert reader.facts is None  # the facts are read again at the next refresh, with the totals


def test_where_the_label_api_fails_the_first_read_reads_the_raw_figures_and_the_next_the_rules(recorded_url):
    """Whether the rules are there is asked beside the raw figures, not first: a server that never answers
    takes no round more than it did before the label API was asked."""
    reader = FleetReader(OVERVIEW, FleetRules())
    sample, log = _first(recorded_url, reader, no_labels=True)
    assert OVERVIEW.rules_present in _sent(log) and OVERVIEW.node_memory in _sent(log)
    assert sample.node_figures_from == "raw series" and sample.state == "ok"

    async def later():
        async with PrometheusClient(Connection(recorded_url)) as client:
            return await reader.read(client, AT + 5)

    assert asyncio.run(later()).node_figures_from == "recording rules"


def test_the_label_api_lists_the_names_of_the_matching_series(recorded_url, fleet_url):
    async def names(url: str, selector: str) -> list[str]:
        async with PrometheusClient(Connection(url)) as client:
            return await client.label_values("__name__", selector, AT - 300, AT)

    recorded = asyncio.run(names(recorded_url, '{__name__=~"gpumem:.*"}'))
    assert recorded == sorted(recorded) and "gpumem:node_gpus:count" in recorded
    assert asyncio.run(names(fleet_url, '{__name__=~"gpumem:.*"}')) == []
    with pytest.raises(PrometheusError) as failed:
        asyncio.run(names(fleet_url, "{__name__=~"))
    assert failed.value.kind == "query" and "\n" not in str(failed.value)


def _looked(url: str, **recording):
    """A first look at AT, then the next read asked 30 s later: (the first look, its log, the rest, its log)."""
    reader = FleetReader(OVERVIEW, FleetRules(), first_look=True)
    look, log = _first(url, reader, no_labels=recording.pop("no_labels", False))
    rest, rest_log = _first(url, reader, AT + 30, **recording)
    return look, log, rest, rest_log


@pytest.mark.parametrize(("server", "recorded"), [("fleet_url", False), ("recorded_url", True)])
def test_a_first_look_leaves_the_costly_facts_to_the_next_read_which_is_the_first_read(server, recorded, request):
    """The first look asks none of the costly slow facts and none of the engines' (nor, where the rules are, which
    nodes they record: the rules' names listed are taken, checked with the rest); the next read asks them at the
    first look's moment, and its sample is the one `fleet check` reads there."""
    url = request.getfixturevalue(server)
    look, log, rest, rest_log = _looked(url)
    assert look.reading == ["which pods hold which GPUs", "which nodes reported in the hour", "the engines"]
    assert LATER & set(_sent(log)) == set() and look.gpus == [] and look.evaluated_at == AT
    checks = {OVERVIEW.rules_named, OVERVIEW.nodes_age}
    assert (checks & set(_sent(log)) == set()) is recorded and (checks <= set(_sent(rest_log))) is recorded
    assert look.node_figures_from == ("recording rules" if recorded else "raw series")
    assert set(_sent(rest_log)) >= LATER and rest.evaluated_at == AT and rest.reading == []
    assert rest == _first(url)[0]


@pytest.mark.parametrize("server", ["fleet_url", "recorded_url"])
def test_a_first_look_raises_only_what_the_whole_picture_raises_and_is_never_ok(server, request):
    """Its findings are the whole picture's (node-e stale by its age, node-h's own exporter's); those that need the
    join or the engines (engine down, KV saturated, headroom, config drift) wait; its verdict says it is a first
    look, and the whole picture's is `fleet check`'s."""
    url = request.getfixturevalue(server)
    look, _, rest, _ = _looked(url)

    def said(sample) -> set[tuple]:
        return {(f.node, f.finding.severity, f.finding.code, f.finding.title) for f in judge_fleet(sample)}

    first, whole = said(look), said(rest)
    assert first <= whole and ("node-e", "source_stale") in {(n, c) for n, _, c, _ in first}
    assert {"kv_pool_short", "weights_mismatch"} <= {c for n, _, c, _ in first if n == "node-h"}
    assert {"engine_down", "kv_saturated", "headroom_low", "config_drift"} <= {c for _, _, c, _ in whole - first}
    code, words = verdict(look, judge_fleet(look))
    assert code == 2 and words.startswith("first look - CRITICAL - ") and words.endswith("when the rest is read")
    checked = _first(url)[0]
    assert verdict(rest, judge_fleet(rest)) == verdict(checked, judge_fleet(checked))


def test_a_first_look_where_the_label_api_fails_asks_the_servers_check_with_the_rest(recorded_url):
    look, log, rest, rest_log = _looked(recorded_url, no_labels=True)
    assert look.node_figures_from == "raw series" and OVERVIEW.rules_present not in _sent(log)
    assert OVERVIEW.rules_present in _sent(rest_log) and rest == _first(recorded_url, no_labels=True)[0]


@pytest.mark.parametrize("server", ["fleet_url", "recorded_url"])
def test_a_costly_fact_that_fails_with_the_rest_degrades_as_in_the_first_read(server, request):
    url = request.getfixturevalue(server)
    _, _, rest, _ = _looked(url, failing=(OVERVIEW.gpu_pods,))
    assert rest.state == "stale" and "bad_data: rejected here" in (rest.error or "")
    assert rest == _first(url, failing=(OVERVIEW.gpu_pods,))[0]
