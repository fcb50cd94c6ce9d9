"""A refresh over the recording rules keeps their per-node figures until the rules are evaluated again
(kept_recorded.py): in between it asks when they were evaluated, not the figures, and says what a fresh read
says; after an evaluation it reads them again. A real Prometheus over the test fleet, the rules evaluated
every 5 s (conftest.recorded_blocks)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace

import pytest

from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, Result, Series
from gpumem_tui.sources.prometheus.kept_recorded import KEPT, NARROW_AT_MOST, Moved, _as_then, _moved, _patched
from gpumem_tui.sources.prometheus.queries import RECORDED, Queries
from gpumem_tui.sources.prometheus.query_table import TABLE
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.test_fleet_reader import Recording

pytestmark = pytest.mark.prometheus
QUERIES = Queries(look=0.1)
FIGURES = ("gpumem:node_fb_mib:sum", "gpumem:node_fb_free_mib:min", "gpumem:node_fb_used_age_s:min")


def _reads(url: str, reader: FleetReader, times: list[float]):
    """Each moment's sample and the PromQL its refresh sent."""

    async def read():
        out = []
        for at in times:
            async with Recording(Connection(url)) as client:
                client.sent = []
                out.append((await reader.read(client, at), client.sent))
        return out

    return asyncio.run(read())


def _figures_asked(asked: list[str]) -> set[str]:
    return {name for name in FIGURES for promql in asked if name in promql and "timestamp(" not in promql}


def test_the_group_is_evaluated_in_the_order_the_probe_assumes():
    """The probe reads the last rule of the group: every other rule's series are written before it; the cards'
    totals, one series a card and total, not one a node."""
    assert list(QUERIES.recording_rules())[-1] == RECORDED[-1] == "gpumem:card_total_mib:count_values"


def test_figures_are_kept_between_evaluations_and_read_again_after_one(recorded_url):
    async def evaluated(at: float) -> float:
        async with PrometheusClient(Connection(recorded_url)) as client:
            return (await client.query(QUERIES.rules_evaluated, at)).series[0].value

    moment = asyncio.run(evaluated(AT - 10))  # an evaluation, the next 5 s later
    assert asyncio.run(evaluated(moment + 3)) == moment
    assert asyncio.run(evaluated(moment + 6)) == moment + 5
    reader = FleetReader(QUERIES, FleetRules())
    (_, _), (read, asked) = _reads(recorded_url, reader, [moment - 4, moment + 1])
    part = reader.nodes.part
    ((kept, between),) = _reads(recorded_url, reader, [moment + 3])
    assert reader.nodes.part is part  # made of the same answers: the nodes kept whole (node_part.py)
    ((again, after),) = _reads(recorded_url, reader, [moment + 6])
    assert reader.nodes.part is not part
    assert read.node_figures_from == kept.node_figures_from == again.node_figures_from == "recording rules"
    assert _figures_asked(asked) == set(FIGURES)
    assert _figures_asked(between) == set()  # only when the rules were evaluated
    assert any("timestamp(gpumem:card_total_mib:count_values" in promql for promql in between)
    assert _figures_asked(after) == set(FIGURES)

    (_, _), (fresh, _) = _reads(recorded_url, FleetReader(QUERIES, FleetRules()), [moment - 4, moment + 3])
    assert kept.nodes == fresh.nodes and kept.stale_nodes == fresh.stale_nodes
    assert kept.model_dump() == fresh.model_dump()  # its ages, warnings and GPUs read one by one too
    (_, _), (fresh, _) = _reads(recorded_url, FleetReader(QUERIES, FleetRules()), [moment - 4, moment + 6])
    assert again.nodes == fresh.nodes


def test_figures_that_answer_beside_queries_that_all_fail_are_a_partial_refresh(recorded_url):
    """A server (here a proxy before the real one) that answers a refresh's recorded figures and refuses every
    other query: the refresh is the figures and says why the rest is missing, as when the figures were asked
    with the others, never a failed refresh."""
    import urllib.parse
    import urllib.request
    from http.server import BaseHTTPRequestHandler

    from tests.loopback import serving

    recorded = replace(QUERIES, rules=True)
    answered = {TABLE[n].promql(recorded, *([{}] if n == "node_low" else [])) for n in KEPT}
    answered |= {recorded.rules_evaluated, recorded.rules_named}

    class Refusing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
            form = self.rfile.read(int(self.headers.get("content-length", 0)))
            query = urllib.parse.parse_qs(form.decode()).get("query", [""])[0]
            refused = query not in answered if strict else "gpumem:" not in query
            if self.path.startswith("/api/v1/query") and refused:
                self._send(503, b'{"status":"error","errorType":"unavailable","error":"refused here"}')
                return
            self._forward(form, "POST")

        def do_GET(self) -> None:  # noqa: N802 - the label API
            self._forward(None, "GET")

        def _forward(self, form: bytes | None, method: str) -> None:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "accept-encoding")}
            request = urllib.request.Request(recorded_url + self.path, form, headers, method=method)
            with urllib.request.urlopen(request) as answer:  # noqa: S310 - the loopback server of this test
                self._send(answer.status, answer.read())

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    reader, strict = FleetReader(QUERIES, FleetRules()), False
    with serving(Refusing) as url:
        _reads(url, reader, [AT - 20])  # the first read: what the rules' series answer
        strict = True  # then only the refresh's figures
        ((later, sent),) = _reads(url, reader, [AT])
    assert later.node_figures_from == "recording rules" and later.nodes
    assert "refused here" in (later.error or "") and later.state == "stale"
    assert _figures_asked(sent) == set(FIGURES)


def test_an_answer_that_reads_as_the_kept_one_is_the_kept_one():
    """After an evaluation, a recorded answer whose series read as the kept one's (the same labels, most the very
    objects as the label memo gives them, the same values and warnings) is taken as the kept object, so the
    nodes made of it stay whole; any difference is the new answer."""
    labels = [{"Hostname": f"node-{i}", "field": "USED"} for i in range(3)]
    then = Result([Series(lab, 10.0 * i, 100.0) for i, lab in enumerate(labels)])
    same = Result([Series(lab, 10.0 * i, 115.0) for i, lab in enumerate(labels)])  # a later query's time
    assert _as_then(same, then) is then
    moved = Result([Series(lab, 10.0 * i + (i == 2), 115.0) for i, lab in enumerate(labels)])
    assert _as_then(moved, then) is moved
    copied = Result([Series(dict(lab), 10.0 * i, 115.0) for i, lab in enumerate(labels)])
    assert _as_then(copied, then) is then
    renamed = Result([*same.series[:2], Series({"Hostname": "node-x", "field": "USED"}, 20.0, 115.0)])
    assert _as_then(renamed, then) is renamed
    fewer = Result(same.series[:2])
    assert _as_then(fewer, then) is fewer
    warned = Result(same.series, ["partial answer"])
    assert _as_then(warned, then) is warned
    assert _as_then(same, None) is same
    signed = Result([Series(lab, -0.0 if i == 0 else 10.0 * i, 115.0) for i, lab in enumerate(labels)])
    assert _as_then(signed, then) is signed  # -0.0 is written so, not as 0.0


def _evaluated(url: str, at: float) -> float:
    async def read() -> float:
        async with PrometheusClient(Connection(url)) as client:
            return (await client.query(QUERIES.rules_evaluated, at)).series[0].value

    return asyncio.run(read())


def _narrowed(asked: list[str]) -> list[str]:
    """The recorded figures asked for some nodes by name."""
    return [p for p in asked if "gpumem:node_fb_mib:sum" in p and "ostname=~" in p]


def test_after_an_evaluation_only_the_nodes_that_moved_are_read(changes_url, recorded_url):
    """Where the rules record which nodes' figures moved (NODE_CHANGED), a refresh after an evaluation reads those
    nodes' figures only, by name, and its sample is the one read from the figures whole (the same blocks without
    the record). node-b's memory moves at some evaluations; node-nan's NaN, read NaN again, has not moved; node-c's
    count under the fraction went to none at 56 s and, no staleness marker ending it in these blocks, is read until
    a lookback later: the record names node-c at each evaluation meanwhile."""
    moment = _evaluated(changes_url, AT - 10)
    # the first read, the first refresh (which reads the figures whole: the first read keeps none), then each
    # refresh after one more evaluation
    times = [moment - 4, *(moment + 1 + 5 * k for k in range(6))]
    reader = FleetReader(QUERIES, FleetRules())
    reads, how, parts = [], [], []
    for at in times:
        reads += _reads(changes_url, reader, [at])
        how.append(reader.nodes.how)  # how its nodes were made (node_part.py)
        parts.append(reader.nodes.part)
    assert _figures_asked(reads[1][1]) == set(FIGURES) and not _narrowed(reads[1][1])
    # node-b's record made again alone where its series moved, the rest kept at their new ages; node-c's lingering
    # series read as kept: every node kept
    moving = ["node-b" in "".join(_narrowed(asked)) for _, asked in reads[2:]]
    assert {h for b, h in zip(moving, how[2:], strict=True) if b} == {"moved"}
    for at, (sample, asked), part in zip(times[2:], reads[2:], parts[2:], strict=True):
        base = FleetReader(QUERIES, FleetRules())
        whole = _reads(recorded_url, base, [moment - 4, at])[-1]
        assert _figures_asked(whole[1]) == set(FIGURES) and base.nodes.how == "made"
        assert sample.model_dump(exclude={"source"}) == whole[0].model_dump(exclude={"source"}), at
        assert part.needs == base.nodes.part.needs  # the nodes read GPU by GPU (node-h's exporter looks again)
        assert {n for p in _narrowed(asked) for n in re.findall(r"node-[a-z]+", p)} <= {"node-b", "node-c"}
        assert not any(p.startswith("max without () (gpumem:node_fb_mib:sum") and '=~"node' not in p for p in asked)
        assert "gpumem:node_fb_used_age_s:min" in "".join(asked)  # the ages are read whole
    assert any("node-b" in "".join(_narrowed(asked)) for _, asked in reads[2:])  # moved at some evaluations
    assert all('Hostname=~"node-c"' in "".join(_narrowed(asked)) for _, asked in reads[2:])  # its count lingers


def test_the_figures_are_read_whole_where_the_record_compares_other_evaluations(changes_url):
    """A refresh two evaluations after the one kept: the record compares the last two, so it is not used."""
    moment = _evaluated(changes_url, AT - 10)
    reader = FleetReader(QUERIES, FleetRules())
    (_, _), (_, _), (sample, asked) = _reads(changes_url, reader, [moment - 4, moment + 1, moment + 11])
    assert not _narrowed(asked) and _figures_asked(asked) == set(FIGURES)
    (_, _), (whole, _) = _reads(changes_url, FleetReader(QUERIES, FleetRules()), [moment - 4, moment + 11])
    assert sample.model_dump() == whole.model_dump()


def test_the_record_is_used_only_where_it_compares_the_evaluation_kept_with_the_one_probed():
    """`since` must be the evaluation the answers were kept from and `at` the one the probe names; a node's series
    of an older evaluation (no staleness marker ended it) has not moved now; too many nodes are read whole."""
    keys = ("Hostname", "instance")

    def record(since: float, at: float, *nodes: tuple[str, float]) -> Result:
        marks = [Series({"changes": "since"}, since, at), Series({"changes": "at"}, at, at)]
        return Result(marks + [Series({"Hostname": name, "instance": f"{name}:9400"}, v, at) for name, v in nodes])

    moved = _moved(record(100.0, 130.0, ("a", 130.0), ("b", 100.0)), 100.0, 130.0, keys)
    assert moved is not None and moved.nodes == {("a", "a:9400")}  # b moved at an older evaluation
    still = _moved(record(100.0, 130.0), 100.0, 130.0, keys)
    assert still is not None and still.nodes == set()  # none moved: the answers kept are the answers
    assert _moved(record(70.0, 130.0, ("a", 130.0)), 100.0, 130.0, keys) is None  # compares other evaluations
    assert _moved(record(100.0, 130.0, ("a", 130.0)), 100.0, 160.0, keys) is None  # an older record
    assert _moved(Result([Series({"changes": "at"}, 130.0, 130.0)]), 100.0, 130.0, keys) is None  # no `since`
    assert _moved(None, 100.0, 130.0, keys) is None  # the query failed
    many = record(100.0, 130.0, *((f"n{i}", 130.0) for i in range(NARROW_AT_MOST + 1)))
    assert _moved(many, 100.0, 130.0, keys) is None


def test_a_patched_answer_keeps_the_kept_order_so_one_that_reads_the_same_is_the_kept_one():
    """The nodes that moved take their new series in their old place; a node that went has none, one that came is
    last; where the new series read as the old, `_as_then` gives back the kept answer (its nodes kept whole)."""
    keys = ("Hostname",)
    labels = {(n, f): {"Hostname": n, "field": f} for n in "abc" for f in ("USED", "FREE")}
    then = Result([Series(labels[key], 1.0, 0.0) for key in labels])
    again = Result([Series(dict(labels["b", f]), 1.0, 5.0) for f in ("USED", "FREE")])
    same = _patched(then, again, Moved({("b",)}, keys))
    assert [s.labels for s in same.series] == [s.labels for s in then.series]
    assert _as_then(same, then) is then
    moved = Result([Series({"Hostname": "b", "field": "USED"}, 2.0, 5.0), Series({"Hostname": "d"}, 3.0, 5.0)])
    patched = _patched(then, moved, Moved({("b",), ("c",), ("d",)}, keys))  # b moved, c went, d came
    assert [(s.labels.get("Hostname"), s.labels.get("field"), s.value) for s in patched.series] == [
        ("a", "USED", 1.0),
        ("a", "FREE", 1.0),
        ("b", "USED", 2.0),
        ("d", None, 3.0),
    ]


def test_a_node_whose_series_end_without_a_staleness_marker_goes_when_a_whole_read_drops_it(tmp_path):
    """Recorded series that no staleness marker ends (blocks backfilled, or a Prometheus restarted after the node
    went) are read until their last sample is a lookback old, a moment that is no evaluation's: the record names
    such a node at each evaluation until neither it nor the evaluation before reads it, so a refresh that used the
    record drops it when a read of the figures whole does. Servers with a 20 s lookback, so node-e (its exporter
    stops at 30 s) leaves the rules' output at about 50 s and the reads at about 70 s, within the fleet's span."""
    from tests.sources.prometheus.conftest import changes_blocks, fleet_text, recorded_blocks
    from tests.sources.prometheus.server import T0, backfill, running

    short = ("--query.lookback-delta=20s",)
    for name in ("fleet", "recorded", "changes"):
        (tmp_path / name).mkdir()
    fleet = backfill(fleet_text(), tmp_path / "fleet")
    with running(fleet, flags=short) as url:
        recorded = recorded_blocks(url, fleet, tmp_path / "recorded", QUERIES)
    with running(recorded, flags=short) as url:
        changes = changes_blocks(url, recorded, tmp_path / "changes", QUERIES)
    with running(changes, flags=short) as url:
        moment = _evaluated(url, T0 + 50)  # node-e is in the rules' output until about then
        times = [moment - 4, *(moment + 1 + 5 * k for k in range(16))]
        reads = _reads(url, FleetReader(QUERIES, FleetRules()), times)
        shown = []
        for at, (sample, _) in zip(times[2:], reads[2:], strict=True):
            (_, _), (whole, _) = _reads(url, FleetReader(QUERIES, FleetRules()), [moment - 4, at])
            assert (sample.nodes, sample.stale_nodes) == (whole.nodes, whole.stale_nodes), at - T0  # not the join's age
            shown.append(any(n.name == "node-e" and n.used_bytes is not None for n in sample.nodes))
    assert shown[0] and not shown[-1]  # node-e's figures read, then gone
    assert any(_narrowed(asked) for _, asked in reads[2:])  # the record was used
    assert any(not _narrowed(asked) for _, asked in reads[2:])  # none moved at others: the answers kept are used


def test_a_moved_node_without_a_name_takes_its_new_series_in_its_place():
    """A node whose series carry none of the node's labels (pushed without `instance`) is the key of empty names:
    a patched answer holds its new series, not the kept ones beside them."""
    keys = ("Hostname", "instance")
    then = Result([Series({"Hostname": "a", "field": "USED"}, 1.0, 0.0), Series({"field": "USED"}, 1.0, 0.0)])
    now = Result([Series({"field": "USED"}, 2.0, 5.0)])
    patched = _patched(then, now, Moved({("", "")}, keys))
    assert [(s.labels.get("Hostname"), s.value) for s in patched.series] == [("a", 1.0), (None, 2.0)]


def test_a_refresh_whose_narrowed_read_failed_says_so_and_the_next_reads_the_figure_whole(changes_url):
    """The narrowed read of node-b's memory refused: that refresh says why its memory is missing, as when the figure
    read whole fails; the next refresh keeps nothing of that figure, reads it whole and says what a whole read says."""
    from tests.sources.prometheus.test_fleet_reader import _refusing

    moment = _evaluated(changes_url, AT - 10)
    times = [moment - 4, *(moment + 1 + 5 * k for k in range(6))]
    refused = 'hostname=~"node-b"'
    reader = FleetReader(QUERIES, FleetRules())

    async def read():
        out = []
        for at in times:
            async with _refusing(refused)(Connection(changes_url)) as client:
                client.sent = []
                out.append((at, await reader.read(client, at), list(client.sent)))
        return out

    reads = asyncio.run(read())
    failed = [k for k, (_, _, asked) in enumerate(reads) if any(refused in p for p in asked)]
    assert failed and failed[0] + 1 < len(reads)  # node-b's memory moved at some evaluation, not the last
    at, sample, _ = reads[failed[0]]
    assert "refused here" in (sample.error or "")
    at, after, asked = reads[failed[0] + 1]
    assert any(p.startswith("max without () (gpumem:node_fb_mib:sum{field") for p in asked)  # read whole
    (_, _), (whole, _) = _reads(changes_url, FleetReader(QUERIES, FleetRules()), [moment - 4, at])
    assert (after.nodes, after.stale_nodes) == (whole.nodes, whole.stale_nodes)
