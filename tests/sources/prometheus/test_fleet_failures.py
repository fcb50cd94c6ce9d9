"""Bad input and a failing source: one line on stderr, nothing on stdout, and a non-zero exit (`fleet check`
answers 3, UNKNOWN, to all of them as a monitoring plugin must; `fleet snapshot` 2 for bad input, 3 for no
source). A partial answer is judged, and said."""

from __future__ import annotations

import asyncio
import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, PrometheusError
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.fake import answering
from tests.sources.prometheus.server import free_port, running

PASSWORD_HASH = "$2b$12$hNf2lSsxfm0.i4a.1kVpSOVyBCfIB51VRjgBUyv6kdnyTlgWj81Ay"
"""bcrypt of `test`, the example of Prometheus's basic-auth guide (prometheus.io/docs/guides/basic-auth)."""
ADMIN_TEST = "Authorization: Basic YWRtaW46dGVzdA=="
"""admin:test"""


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


@pytest.mark.parametrize("action, code", [("check", 3), ("snapshot", 3)])
def test_prometheus_down_is_no_source(action, code, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["fleet", action, "--prometheus", url, "--at", str(AT)]) == code
    assert "Prometheus cannot be reached" in _one_line(capsys)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--prometheus", "prometheus:9090"], "expected an http:// or https:// URL"),
        (["--prometheus", "http://127.0.0.1:1", "--header", "no colon"], "expected NAME: VALUE"),
        (["--prometheus", "http://127.0.0.1:1", "--selector", "cluster=x"], "expected label matchers in braces"),
        (["--prometheus", "http://127.0.0.1:1", "--selector", '{cluster=="x"}'], "cannot read the matcher"),
        (["--prometheus", "http://127.0.0.1:1", "--at", "yesterday"], "expected Unix seconds or an RFC 3339"),
        (["--prometheus", "http://127.0.0.1:1", "--at", "2026-01-01T00:00:00"], "expected Unix seconds"),
        (["--prometheus", "http://127.0.0.1:1", "--bearer-token-file", "no/such/file"], "--bearer-token-file"),
        (["--prometheus", "http://127.0.0.1:1", "--query-timeout", "0"], "must be from 0.1 to 3600 seconds"),
        ([], "--prometheus"),
    ],
)
@pytest.mark.parametrize("action, code", [("check", 3), ("snapshot", 2)])
def test_bad_input_is_one_line(argv, words, action, code, capsys):
    assert main(["fleet", action, *argv]) == code
    assert words in _one_line(capsys)


def test_a_partial_answer_is_judged_and_said(capsys):
    body = json.dumps(
        {
            "status": "success",
            "warnings": ["store 10.0.0.3:10901 unavailable: partial response"],
            "data": {"resultType": "vector", "result": []},
        }
    ).encode()
    with answering(200, body) as url:
        code = main(["fleet", "check", "--prometheus", url, "--at", str(AT), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    (stale,) = [f for f in report["findings"] if f["code"] == "source_stale"]
    assert stale["title"] == "Prometheus: the server answered in part"
    assert "10.0.0.3:10901 unavailable" in stale["explanation"]
    assert report["warnings"] == ["store 10.0.0.3:10901 unavailable: partial response"]


def test_an_answer_that_is_not_the_api_is_down(capsys):
    with answering(502, b"<html>Bad Gateway</html>", "text/html") as url:
        assert main(["fleet", "check", "--prometheus", url, "--at", str(AT)]) == 3
    assert "HTTP 502 Bad Gateway, and the answer is not the query API's JSON" in _one_line(capsys)


def test_a_server_that_never_answers_is_a_hang():
    async def ask(url: str) -> None:
        async with PrometheusClient(Connection(url), query_timeout_s=0.05) as client:
            await client.query("up", AT)

    with answering(200, b"{}", hang_s=5) as url, pytest.raises(PrometheusError) as failure:
        asyncio.run(ask(url))
    assert failure.value.kind == "hang"  # the client's limit, not the server's own `timeout` (below)
    assert "connected but no answer within 2.05 s" in str(failure.value)


TIMED_OUT = b'{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}'
"""Prometheus's answer to a query past its `timeout` (HTTP 503; web/api/v1's errorTimeout). A real server times out
a 1 us query only when evaluating outlasts its clock's check, sometimes not: the answer is served as it writes it."""


def test_a_query_timeout_from_the_server_is_unknown(capsys):
    seen: list[tuple[str, dict[str, str], bytes]] = []
    with answering(503, TIMED_OUT, seen=seen) as url:
        assert main(["fleet", "check", "--prometheus", url, "--at", str(AT), "--query-timeout", "0.5"]) == 3
    assert b"timeout=0.5" in seen[0][2]  # the limit asked of the server
    line = _one_line(capsys)
    assert "Prometheus ran out of time" in line and "query timed out" in line


@pytest.mark.prometheus
def test_401_until_the_credentials_are_sent(fleet_blocks, tmp_path, capsys):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(fleet_blocks, data)
    web = tmp_path / "web.yml"
    web.write_text(f"basic_auth_users:\n  admin: {PASSWORD_HASH}\n", encoding="utf-8")
    with running(data, web) as url:
        assert main(["fleet", "check", "--prometheus", url, "--at", str(AT)]) == 3
        assert "HTTP 401 Unauthorized: check --bearer-token-file or --header" in _one_line(capsys)
        assert main(["fleet", "check", "--prometheus", url, "--at", str(AT), "--header", ADMIN_TEST, "--json"]) == 2
        assert json.loads(capsys.readouterr().out)["coverage"]["nodes"] == 9


@pytest.mark.parametrize(
    "argv",
    [["--at", str(AT), "--selector", '{cluster="no-such-cluster"}'], ["--at", str(AT + 2 * 86400)]],
)
def test_a_fleet_with_no_node_and_no_engine_is_unknown_never_ok(fleet_url, argv, capsys):
    """A selector that matches nothing, or a moment past the hour the fleet is remembered for: nothing was read,
    so nothing can be called OK (a cron job would stay green over a fleet it cannot see). The report is printed,
    with why."""
    assert main(["fleet", "check", "--prometheus", fleet_url, *argv]) == 3
    assert capsys.readouterr().out.startswith("UNKNOWN - no node and no engine within the hour (no dcgm-exporter ")
    assert main(["fleet", "check", "--prometheus", fleet_url, *argv, "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert (report["status"], report["exit_code"], report["coverage"]["nodes"]) == ("UNKNOWN", 3, 0)
