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
    # gpumem-tui export (none does)
    assert len(seen) == len(set(FULL) - set(QUIET)) + 1 + 1
    for path, headers, body in seen:
        form = dict(urllib.parse.parse_qsl(body.decode()))
        assert path == "/prometheus/api/v1/query"
        assert headers["X-Scope-OrgID"] == "team-a" and headers["Authorization"] == "Bearer s3cret"
        assert form["time"] == "1767225720.5" and form["timeout"] == "7.5"
        assert 'cluster="prod-eu"' in form["query"]


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


def test_labels_that_are_not_strings_are_read_as_text():
    """The API sends label values as strings, kept as they are; a server that sends a number or null still
    gives text labels, never a value the join cannot compare."""

    async def ask(url: str):
        async with PrometheusClient(Connection(url)) as client:
            return await client.query("up", AT)

    result = [
        {"metric": {"Hostname": "node-a", "gpu": "0"}, "value": [AT, "1"]},
        {"metric": {"Hostname": "node-b", "gpu": 1, "odd": None}, "value": [AT, "2"]},
    ]
    answer = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
    with answering(200, answer.encode()) as url:
        found = asyncio.run(ask(url)).series
    assert [s.labels for s in found] == [
        {"Hostname": "node-a", "gpu": "0"},
        {"Hostname": "node-b", "gpu": "1", "odd": "None"},
    ]


@pytest.mark.parametrize(
    ("odd", "read_as"),
    [
        ({"metric": {"Hostname": "node-c"}, "value": [AT, "not a number"]}, ({"Hostname": "node-c"}, "nan")),
        ({"metric": {"Hostname": "node-c"}, "value": [AT]}, ({"Hostname": "node-c"}, "nan")),
        ({"metric": {"Hostname": "node-c"}}, ({"Hostname": "node-c"}, "nan")),
        ({"value": [AT, "3"]}, ({}, "3.0")),
        ({"metric": "node-c", "value": [AT, "3"]}, ({}, "3.0")),
        ({"metric": {"Hostname": "node-c"}, "value": [AT, "+Inf"]}, ({"Hostname": "node-c"}, "inf")),
        ({"metric": {"Hostname": "node-c"}, "value": [10**400, "3"]}, ({"Hostname": "node-c"}, "nan")),
        ({"metric": {"Hostname": "node-c"}, "value": [AT, 10**400]}, ({"Hostname": "node-c"}, "nan")),
    ],
)
def test_one_odd_series_is_read_alone_and_the_others_as_sent(odd, read_as):
    """A whole answer is read at once as the API sends it; one series that is not (a value that is no number,
    a missing field) is read as far as it goes (NaN: unknown, never 0), and every other one as sent."""

    async def ask(url: str):
        async with PrometheusClient(Connection(url)) as client:
            return await client.query("up", AT)

    result = [{"metric": {"Hostname": "node-a"}, "value": [AT, "1"]}, odd, {"metric": {}, "value": [AT, "NaN"]}]
    answer = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
    with answering(200, answer.encode()) as url:
        found = asyncio.run(ask(url)).series
    assert [(s.labels, repr(s.value)) for s in found] == [({"Hostname": "node-a"}, "1.0"), read_as, ({}, "nan")]
    assert found[0].timestamp == AT


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
