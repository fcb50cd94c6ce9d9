"""The client: what it sends (POST forms, the headers and token asked for, the query timeout), a range
query against the real server, and the cap on what it reads."""

from __future__ import annotations

import asyncio
import json
import urllib.parse

import pytest

from gpumem_tui.cli import main
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, PrometheusError
from gpumem_tui.sources.prometheus.fleet import FULL, QUIET
from gpumem_tui.sources.prometheus.held_back import PROBE
from gpumem_tui.sources.prometheus.series_checks import MAX_LABEL_CHARS
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.fake import answering

EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()


def test_headers_token_and_selector_reach_every_query(tmp_path, capsys):
    token = tmp_path / "token"
    token.write_text("s3cret\n", encoding="utf-8")
    seen: list = []
    with answering(200, EMPTY, seen=seen) as url:
        argv = ["fleet", "snapshot", "--prometheus", url + "/prometheus/", "--at", "1767225720.5", "--json"]
        argv += ["--header", "X-Scope-OrgID: team-a", "--bearer-token-file", str(token)]
        argv += ["--selector", '{cluster="prod-eu"}', "--query-timeout", "7.5"]
        assert main(argv) == 0
    capsys.readouterr()
    # every query of a full read (the quiet ones in one request), each checked below, and whether any node runs
    # gpumem-tui export (none does), and how far behind the time asked the server answers (no series in it)
    assert len(seen) == len(set(FULL) - set(QUIET)) + 1 + 1 + 1
    for path, headers, body in seen:
        form = dict(urllib.parse.parse_qsl(body.decode()))
        assert path == "/prometheus/api/v1/query"
        assert headers["X-Scope-OrgID"] == "team-a" and headers["Authorization"] == "Bearer s3cret"
        assert form["time"] == "1767225720.5" and form["timeout"] == "7.5"
        assert 'cluster="prod-eu"' in form["query"] or form["query"] == PROBE


def test_an_answer_over_the_cap_is_not_read():
    async def ask(url: str) -> None:
        async with PrometheusClient(Connection(url), max_bytes=100) as client:
            await client.query("up", AT)

    big = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}, "pad": "x" * 500})
    with answering(200, big.encode()) as url, pytest.raises(PrometheusError) as failure:
        asyncio.run(ask(url))
    assert "over the 100-byte limit" in str(failure.value) and failure.value.kind == "down"


def test_a_ca_file_that_cannot_be_read_is_bad_input(tmp_path, capsys):
    (tmp_path / "ca.pem").write_text("not a certificate", encoding="utf-8")
    for ca in (str(tmp_path / "missing.pem"), str(tmp_path / "ca.pem")):
        assert main(["fleet", "snapshot", "--prometheus", "https://127.0.0.1:1", "--ca-file", ca]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and len(captured.err.splitlines()) == 1 and "--ca-file" in captured.err


@pytest.mark.prometheus
def test_a_range_query_reads_every_point(fleet_url):
    async def ask() -> list:
        async with PrometheusClient(Connection(fleet_url)) as client:
            answer = await client.query_range('DCGM_FI_DEV_FB_USED{Hostname="node-a"} * 2^20', AT - 60, AT, 15)
        return answer.series

    (series,) = asyncio.run(ask())
    assert [t for t, _ in series.points] == [AT - 60, AT - 45, AT - 30, AT - 15, AT]
    assert all(value % 2**20 == 0 and value > 0 for _, value in series.points)


@pytest.mark.parametrize(
    ("odd", "why"),
    [
        ({"metric": {"Hostname": "node-c"}, "value": [AT, "not a number"]}, "a value that is not a number"),
        ({"metric": {"Hostname": "node-c"}, "value": [AT]}, 'a value that is not [time, "number"]'),
        ({"metric": {"Hostname": "node-c"}}, 'a value that is not [time, "number"]'),
        ({"metric": {"Hostname": "node-c"}, "value": [AT, 3]}, "a value that is a JSON number, not a string"),
        ({"metric": {"Hostname": "node-c"}, "value": [AT, None]}, "a value that is a JSON null, not a string"),
        ({"metric": {"Hostname": "node-c"}, "value": [str(AT), "3"]}, "a time that is not a number"),
        ({"metric": {"Hostname": "node-c"}, "value": [10**400, "3"]}, "a time that is not a number"),
        ({"metric": {"Hostname": "node-c"}, "value": [AT, "1e400"]}, "a value past a float's range"),
        ({"metric": {"Hostname": "node-c", "gpu": 1}, "value": [AT, "3"]}, "a label value that is not a string"),
        ({"value": [AT, "3"]}, "no labels object"),
        ({"metric": ["Hostname", "node-c"], "value": [AT, "3"]}, "no labels object"),
        ([{"Hostname": "node-c"}, [AT, "3"]], "not a series object"),
        ({"metric": {"Hostname": "node-a"}, "value": [AT, "5"]}, "the labels of an earlier series"),
    ],
)
def test_one_series_not_as_documented_is_skipped_with_a_note(odd, why):
    """A whole answer is read at once as the API sends it; one series that is not (labels that are not an
    object of strings, a value that is not `[time, "number"]`, the labels of another) is skipped with a note
    that says why and names it, and every other one is read as sent."""

    async def ask(url: str):
        async with PrometheusClient(Connection(url)) as client:
            return await client.query("up", AT)

    result = [{"metric": {"Hostname": "node-a"}, "value": [AT, "1"]}, odd, {"metric": {}, "value": [AT, "NaN"]}]
    answer = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
    with answering(200, answer.encode()) as url:
        found = asyncio.run(ask(url))
    assert [(s.labels, repr(s.value)) for s in found.series] == [({"Hostname": "node-a"}, "1.0"), ({}, "nan")]
    assert found.series[0].timestamp == AT
    (note,) = found.warnings
    assert note.startswith(f"1 series of the answer skipped ({why}), the first ")
    assert "node-" in note or "'value': [" in note  # the series, by its labels or as it came


@pytest.mark.parametrize(
    ("value", "read_as"), [("NaN", "nan"), ("+Inf", "inf"), ("-Inf", "-inf"), ("-0", "-0.0"), ("1.5e3", "1500.0")]
)
def test_every_value_the_api_documents_is_read_as_such(value, read_as):
    """`NaN`, `+Inf` and `-Inf` are values the API sends (a division by zero, a stale gauge): read as such, the
    callers say "no reading" for a size; never skipped, never a crash."""
    result = [{"metric": {"gpu": "0"}, "value": [AT, value]}]
    answer = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})

    async def ask(url: str):
        async with PrometheusClient(Connection(url)) as client:
            return await client.query("up", AT)

    with answering(200, answer.encode()) as url:
        found = asyncio.run(ask(url))
    assert [repr(s.value) for s in found.series] == [read_as] and found.warnings == []


def test_a_label_value_over_the_cap_is_cut_on_read():
    """A label value of a megabyte is kept to MAX_LABEL_CHARS, with a note: it would be copied into every record
    and line that names its series."""
    result = [{"metric": {"pod": "p" * 2**20, "gpu": "0"}, "value": [AT, "1"]}]
    answer = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})

    async def ask(url: str):
        async with PrometheusClient(Connection(url)) as client:
            return await client.query("up", AT)

    with answering(200, answer.encode()) as url:
        found = asyncio.run(ask(url))
    assert [len(v) for v in found.series[0].labels.values()] == [MAX_LABEL_CHARS, 1]
    assert found.warnings == [f"1 series of the answer have a label value over {MAX_LABEL_CHARS:,} characters: cut"]


def test_queries_beyond_the_connections_wait_for_one_as_long_as_a_query_may_take():
    """A read asks more queries at once than the client opens connections (the first fleet read: 20 on 8).
    While the server takes 3.5 s a query, well within its query timeout, the queries queued for a free
    connection wait for one; they are not failed as if the server could not be reached."""
    answer = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()

    async def ask(url: str):
        async with PrometheusClient(Connection(url), connections=2) as client:
            return await asyncio.gather(*(client.query(f"q{i}", AT) for i in range(4)), return_exceptions=True)

    with answering(200, answer, hang_s=3.5) as url:
        answers = asyncio.run(ask(url))
    assert [type(a).__name__ for a in answers] == ["Result"] * 4, [str(a) for a in answers]
