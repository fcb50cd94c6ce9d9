"""Every request to Prometheus ends within its deadline, and every refresh within its own: a server that sends
a valid answer a byte at a time, or holds its requests, is said as a hang, in one line, never waited on past
the deadlines (httpx's limits are per read: a trickle never trips them). Deadlines are made short through
the client's options and `--query-timeout`; nothing here asserts a wall-clock time."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from gpumem_tui.cli import build_parser, main
from gpumem_tui.cli.tui_cmd import build_app, ended
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, PrometheusError
from tests.app.screen_text import screen_text
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.fake import answering

EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
"""A valid answer: sent a byte each TRICKLE_S it takes 60 bytes' time, longer than every deadline below."""
TRICKLE_S = 0.3


def _client(url: str, **options) -> PrometheusClient:
    """A client whose request deadline is 0.2 + 2.1 + 1 = 3.3 s."""
    return PrometheusClient(Connection(url), connect_timeout_s=0.2, query_timeout_s=0.1, **options)


def test_a_trickling_answer_ends_at_the_request_s_deadline():
    async def ask(url: str) -> None:
        async with _client(url) as client:
            await client.query("up", AT)

    with answering(200, EMPTY, trickle_s=TRICKLE_S) as url, pytest.raises(PrometheusError) as failure:
        asyncio.run(ask(url))
    assert failure.value.kind == "hang"
    assert failure.value.said().startswith("Prometheus did not answer in time: ")
    assert "no complete answer within 3.3 s" in str(failure.value)


def test_a_hung_server_is_a_hang_and_the_queued_queries_are_not_sent():
    """Five queries on two connections to a server that holds every request: the two sent time out, and the
    three queued for a connection are failed as the hang they would meet, not sent nor said as a pool wait."""
    seen: list[tuple[str, dict[str, str], bytes]] = []

    async def ask(url: str) -> list[object]:
        async with _client(url, connections=2) as client:
            return await asyncio.gather(*(client.query(f"q{i}", AT) for i in range(5)), return_exceptions=True)

    with answering(200, EMPTY, hang_s=60, seen=seen) as url:
        answers = asyncio.run(ask(url))
        assert len(seen) == 2
    assert all(isinstance(a, PrometheusError) and a.kind == "hang" for a in answers), answers
    words = [str(a) for a in answers]
    assert sum(w.endswith("/api/v1/query: connected but no answer within 2.1 s") for w in words) == 2, words
    assert sum("not asked after an earlier query's hang" in w for w in words) == 3, words
    assert not any("no free connection" in w for w in words), words


def test_a_refresh_ends_within_its_own_deadline():
    """Each answer comes well within a request's deadline, but three in a row outlast the refresh's 1 s."""

    async def ask(url: str) -> None:
        async with _client(url, refresh_s=1.0) as client:
            for i in range(3):
                await client.query(f"q{i}", AT)

    with answering(200, EMPTY, hang_s=0.6) as url, pytest.raises(PrometheusError) as failure:
        asyncio.run(ask(url))
    assert failure.value.kind == "hang"
    assert "the read was not done within 1 s" in str(failure.value)


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["fleet", "check"], 3),
        (["fleet", "snapshot"], 3),
        (["check", "--node", "node-a"], 3),
    ],
)
def test_a_trickling_server_is_a_hang_to_every_command(argv, code, capsys):
    with answering(200, EMPTY, trickle_s=TRICKLE_S) as url:
        assert main([*argv, "--prometheus", url, "--at", str(AT), "--query-timeout", "0.1"]) == code
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert "Prometheus did not answer in time" in captured.err
    assert "no complete answer within 6.1 s" in captured.err, captured.err


def test_the_node_screen_is_drawn_and_q_quits_while_its_first_read_trickles():
    """`gpumem-tui --prometheus URL --node N` against a trickling server: the screen is up before the node's
    first read has answered, and `q` ends it then (the read used to come first, with no screen and no `q`)."""
    seen: list[str] = []
    with answering(200, EMPTY, trickle_s=TRICKLE_S) as url:
        argv = ["--prometheus", url, "--node", "node-a", "--at", str(AT), "--query-timeout", "0.1"]
        app = build_app(build_parser().parse_args(argv))

        async def look(pilot) -> None:
            seen.append(" ".join(" ".join(screen_text(app)).split()))
            await pilot.press("q")

        app.run(headless=True, size=(120, 40), auto_pilot=look)
    assert f"prometheus {url} node node-a" in seen[0]
    assert app.node.sample is None and app.node.ended_by is None and app.return_code == 0
    assert ended(app) == 0


def test_the_time_an_answer_takes_to_parse_is_not_the_server_s(monkeypatch):
    """An answer read at once but parsed slowly (1/600 s a series here, as 8 answers of 200,000 series parsed side
    by side were): 4 s of parsing, past the request's 3.3 s deadline, and no hang said."""
    from gpumem_tui.sources.prometheus import answers

    made = answers._instants

    def slow(items, skipped, strings):
        threading.Event().wait(len(items) / 600)  # this process busy with the answer, not waiting on the server
        return made(items, skipped, strings)

    monkeypatch.setattr(answers, "_instants", slow)
    result = [{"metric": {"UUID": f"GPU-{i:06d}", "pad": "x" * 200}, "value": [AT, "1"]} for i in range(2400)]
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()

    async def ask(url: str):
        async with _client(url) as client:
            return await client.query("up", AT), client.timeouts.deadline_s

    with answering(200, body) as url:
        answer, deadline_s = asyncio.run(ask(url))
    assert len(answer.series) == 2400 and deadline_s < 2400 / 600
