"""The size limit of a body holds while it streams: chunked without a length, gzip that inflates to far more
than it weighs, many answers read at once, and an error kept after (its traceback must not keep the body).
Measured with tracemalloc: bytes held, not the machine's speed."""

from __future__ import annotations

import asyncio
import tracemalloc

import pytest

from gpumem_tui.sources.http import Budget, HttpError, Timeouts, async_client, read_capped
from tests.sources.prometheus.query_api import Api, serving

LIMIT = 2**20


async def _read(url: str, times: int, budget: Budget | None = None, limit: int = LIMIT) -> list[object]:
    client = async_client(Timeouts(3.0, 20.0, 60.0), connections=8, headers={}, pool_s=60.0)
    async with client:
        reads = (
            read_capped(client, "POST", f"{url}/api/v1/query", limit, {"query": "x"}, budget=budget)
            for _ in range(times)
        )
        return await asyncio.gather(*reads, return_exceptions=True)


def _held(url: str, times: int, budget: Budget | None = None, limit: int = LIMIT) -> tuple[list[object], int, int]:
    """The answers (errors kept), the most bytes held while reading, and the bytes still held with the errors."""
    asyncio.run(_read(url, 1))  # httpx and its transport imported first
    tracemalloc.start()
    try:
        answers = asyncio.run(_read(url, times, budget, limit))
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return answers, peak, now


@pytest.mark.parametrize(
    "api",
    [Api(body=b" " * 64 * LIMIT, chunked=True), Api(body=b" " * 256 * LIMIT, gzip=True)],
    ids=["chunked without a length", "gzip bomb"],
)
def test_a_body_over_the_limit_is_refused_while_it_streams(api):
    with serving(api) as url:
        (answer,), peak, _ = _held(url, 1)
    assert isinstance(answer, HttpError) and "1,048,576-byte limit" in str(answer)
    assert peak < 4 * LIMIT  # the limit, a chunk past it, and the reading's own


def test_answers_read_at_once_share_a_budget_and_a_kept_error_keeps_no_body():
    """Twenty refused answers at once on 8 connections, their errors kept as `gather` keeps them: no more held
    than the budget of two answers (8 answers' worth without it), and nothing once refused."""
    with serving(Api(body=b" " * 64 * LIMIT, gzip=True)) as url:
        answers, peak, kept = _held(url, 20, Budget(8 * LIMIT), limit=4 * LIMIT)
    assert all(isinstance(a, HttpError) for a in answers)
    assert peak < 16 * LIMIT
    assert kept < 8 * LIMIT  # each error keeps its frame: a compressed chunk and a decoder, never a body


def test_a_gzip_answer_within_the_limit_is_read_whole():
    body = b'{"status":"success","data":{"resultType":"vector","result":[]}}' * 1000
    with serving(Api(body=body, gzip=True)) as url:
        ((status, read),) = asyncio.run(_read(url, 1))
    assert status == 200 and read == body


def test_only_gzip_is_asked_for():
    """The one encoding inflated here with a limit; a server that sends another is refused in words."""
    client = async_client(Timeouts(), connections=1, headers={})
    assert client.headers["accept-encoding"] == "gzip"
    asyncio.run(client.aclose())
