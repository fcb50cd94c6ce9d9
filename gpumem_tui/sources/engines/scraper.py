"""Scrape every engine endpoint over HTTP; each answers ok, stale or down, and none can hold up another.

Each endpoint has its own client (sources/http.py) with a total deadline, a capped body and at most two
connections, so a stuck endpoint can only exhaust its own. `poll()` starts a task per endpoint with none in
flight, `latest(wait_s)` takes the newest answers ready within `wait_s`; payloads are parsed on the
scraper's own thread, small ones on the event loop. Deadlines and task lifetimes: docs/design/node-sources.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.sources.engines.endpoints import Endpoint
from gpumem_tui.sources.engines.models_api import ServedModel, merge_models, parse_models
from gpumem_tui.sources.engines.parse import MAX_BYTES, parse_metrics
from gpumem_tui.sources.engines.prometheus import MetricsError
from gpumem_tui.sources.engines.rates import PreemptionRates
from gpumem_tui.sources.engines.registry import registered
from gpumem_tui.sources.http import (
    HttpError,
    Timeouts,
    async_client,
    in_words,
    is_timeout,
    prepare,
    read_request,
    reason_phrase,
)

CONNECTIONS_PER_ENDPOINT = 2
"""`/metrics` and `/v1/models` at once; a request beyond waits for the pool (connect timeout) and fails."""
MODELS_GRACE_S = 0.5
"""How long `/v1/models` may take beyond `/metrics`: an engine's metrics are never held up longer by it."""
MODELS_RETRY_S = 60.0
"""After `/v1/models` ran out of time, it is asked again this much later (it is optional, /metrics is not)."""
INFO_MAX_BYTES = 2**20
"""The largest answer read from an engine's own settings paths (SGLang's server info is tens of KiB)."""
PARSED_ON_LOOP = 64 * 1024
"""Characters of a payload parsed on the event loop: a hop to the parser's thread and back cost more CPU than
parsing this much (its few wanted lines are found in C); a larger payload is parsed off the loop."""


ScrapeError = HttpError
"""Why one endpoint gave no usable answer, in words."""


@dataclass
class _Memory:
    """What the scraper keeps per endpoint between polls."""

    last_good: list[EngineRecord] | None = None
    last_good_at: float = 0.0
    served: list[ServedModel] | None = None
    models_after: float = float("-inf")
    rates: PreemptionRates = field(default_factory=PreemptionRates)
    info: Any = None
    """The engine's own settings record (`Engine.read_info`), once read."""
    info_after: float = float("-inf")
    """When its settings are asked again: never once every path answered, else MODELS_RETRY_S later."""
    latest: EndpointStatus | None = None
    poll: asyncio.Future | None = None
    poll_started: float = 0.0
    poll_look: int = 0
    """The scraper's `looks` when this poll started."""
    client: Any = None
    client_spoilt: bool = False
    requests: dict[str, Any] = field(default_factory=dict)
    """URL -> its GET as `client` built it, sent again at each poll (`Scraper._request`)."""


class Scraper:
    """Polls endpoints concurrently. Use as `async with Scraper(...) as s: statuses = await s.scrape()`."""

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        *,
        connect_timeout_s: float = 1.0,
        read_timeout_s: float = 2.0,
        max_bytes: int = MAX_BYTES,
        stale_limit_s: float = 60.0,
        deadline_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`deadline_s`: the most one request may take, connection and whole body together (default: the
        connect and read timeouts plus 1 s)."""
        self.endpoints = list(endpoints)
        self._timeouts = Timeouts.of(connect_timeout_s, read_timeout_s, deadline_s)
        self.deadline_s = self._timeouts.deadline_s
        self.connect_timeout_s, self.read_timeout_s = connect_timeout_s, read_timeout_s
        self.max_bytes, self.stale_limit_s, self.clock = max_bytes, stale_limit_s, clock
        self._memory: dict[str, _Memory] = {}
        self.looks = 0
        """How many times `latest` has answered."""
        self._prepared = False
        """Whether httpx was loaded (`http.prepare`, in a thread, before the first poll)."""
        self._parser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpumem-parse")

    async def __aenter__(self) -> Scraper:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Cancel and await every poll in flight, then close every connection."""
        for url in list(self._memory):
            await self._forget(url)
        self._parser.shutdown(wait=False, cancel_futures=True)

    async def scrape(self) -> list[EndpointStatus]:
        """One poll of every endpoint, in the order given, waiting for each answer (or its deadline)."""
        return await self.latest(None)

    def poll(self) -> None:
        """Start a poll of every endpoint that has none in flight."""
        for point in self.endpoints:
            memory = self._memory.setdefault(point.url, _Memory())
            if memory.poll is None:
                memory.poll, memory.poll_started = asyncio.ensure_future(self._poll(point, memory)), time.monotonic()
                memory.poll_look = self.looks

    async def latest(self, wait_s: float | None) -> list[EndpointStatus]:
        """Every endpoint's newest answer, after waiting at most `wait_s` for the polls started since the
        last look (None: for every poll in flight, until it ends). A poll still out shows the endpoint's last
        answer; one out longer than its deadline is stale. A poll already out at the last look is not
        waited for again: that endpoint is slow, and a sample never pays for it twice."""
        for url in set(self._memory) - {point.url for point in self.endpoints}:
            await self._forget(url)
        if not self._prepared and self.endpoints:
            await asyncio.to_thread(prepare)
            self._prepared = True
        self.poll()
        out = [
            m.poll
            for m in self._memory.values()
            if m.poll is not None and not m.poll.done() and (wait_s is None or m.poll_look == self.looks)
        ]
        if out:
            await asyncio.wait(out, timeout=wait_s)
        else:
            await asyncio.sleep(0)  # the polls out get their turn, whoever calls in a loop
        self.looks += 1
        return [self._status(point, self._memory[point.url]) for point in self.endpoints]

    def _status(self, point: Endpoint, memory: _Memory) -> EndpointStatus:
        task = memory.poll
        if task is not None and task.done():
            memory.poll = None
            if not task.cancelled():
                memory.latest = task.result()
        waited = time.monotonic() - memory.poll_started
        if memory.latest is None:
            return EndpointStatus(
                url=point.url, state="down", error=f"no answer yet ({waited:.1f} s)", **_joined(point)
            )
        if memory.poll is not None:  # still out: its last answer, aged
            if waited > self.deadline_s:
                return self._failed(point, memory, f"no answer for {waited:.0f} s")
            if memory.latest.state != "ok":
                return self._failed(point, memory, memory.latest.error or "no answer")
        return memory.latest.model_copy(update=_joined(point))

    async def _forget(self, url: str) -> None:
        """Cancel and await this endpoint's poll, close its connections, drop what was kept for it."""
        memory = self._memory.pop(url)
        await _settle(memory.poll)
        await _shielded_close(memory.client)

    async def _poll(self, point: Endpoint, memory: _Memory) -> EndpointStatus:
        try:
            records = await self._fetch(point, memory)
        except Exception as exc:  # noqa: BLE001 - any failure degrades this endpoint only
            memory.client_spoilt |= not isinstance(exc, MetricsError)  # a payload read whole spoils nothing
            return self._failed(point, memory, _in_words(exc, self._timeouts))
        finally:
            if memory.client_spoilt:
                # A request cut short (deadline, refusal, cancellation) can leave the pool believing a
                # connection is still busy: this endpoint's next poll starts on fresh connections.
                client, memory.client, memory.client_spoilt = memory.client, None, False
                await _shielded_close(client)
        now = self.clock()
        memory.last_good, memory.last_good_at = memory.rates.apply(records, now), now
        return EndpointStatus(url=point.url, state="ok", age_s=0.0, **_joined(point), records=memory.last_good)

    def _failed(self, point: Endpoint, memory: _Memory, error: str) -> EndpointStatus:
        age = self.clock() - memory.last_good_at
        if memory.last_good is not None and age <= self.stale_limit_s:
            return EndpointStatus(
                url=point.url,
                state="stale",
                error=error,
                age_s=age,
                **_joined(point),
                records=memory.last_good,
            )
        return EndpointStatus(url=point.url, state="down", error=error, **_joined(point))

    async def _fetch(self, point: Endpoint, memory: _Memory) -> list[EngineRecord]:
        """/metrics within the deadline, with `/v1/models` beside it while none was read; both requests
        are cancelled and awaited on every way out."""
        client = self._client(memory)
        # none yet, or an empty list from an engine still loading: ask again (later, if it was slow)
        ask = not memory.served and time.monotonic() >= memory.models_after
        models = asyncio.ensure_future(self._served_models(client, point, memory)) if ask else None
        try:
            async with self._timeouts.deadline():
                text = await self._get(memory, client, point.metrics_url)
            if models is not None:
                await asyncio.wait([models], timeout=MODELS_GRACE_S)
                if not models.done():  # slow: asked again later, and never again held up for
                    memory.models_after = time.monotonic() + MODELS_RETRY_S
        finally:
            if models is not None and not models.done():
                memory.client_spoilt = True
            await _settle(models)
        records = await self._parse(parse_metrics, text, endpoint=point.url)
        records = merge_models(records, memory.served) if memory.served else records
        return await self._with_info(client, point, memory, records)

    async def _with_info(self, client: Any, point: Endpoint, memory: _Memory, records: list[EngineRecord]) -> list:
        """Records of an engine that states its own settings (the registry's `info` paths), carrying them: asked
        beside /metrics until every path has answered, then kept."""
        entry = registered(records[0].engine) if records else None
        if entry is None or entry.read_info is None or entry.with_info is None:
            return records
        if time.monotonic() >= memory.info_after:
            memory.info, answered = await self._info(client, point, memory, entry.info, entry.read_info)
            memory.info_after = float("inf") if answered else time.monotonic() + MODELS_RETRY_S
        return entry.with_info(records, memory.info) if memory.info is not None else records

    async def _info(
        self, client: Any, point: Endpoint, memory: _Memory, paths: tuple[str, ...], read: Callable[..., Any]
    ) -> tuple[Any, bool]:
        """Each of the engine's settings paths within the read timeout, read together (path -> text, or None and
        `path!` -> why), as its settings record; and whether every path answered."""
        base = point.models_url.removesuffix("/v1/models")
        answers: dict[str, str | None] = {}

        async def ask(path: str) -> None:
            try:
                async with asyncio.timeout(self.read_timeout_s):
                    status, body = await read_request(client, client.build_request("GET", base + path), INFO_MAX_BYTES)
                if status >= 400:
                    raise ScrapeError(f"HTTP {status} {reason_phrase(status)}".strip(), status)
                answers[path] = body.decode("utf-8", errors="replace")
            except Exception as exc:  # noqa: BLE001 - optional: said in the settings' notes, asked again later
                memory.client_spoilt |= not isinstance(exc, ScrapeError)
                answers[path], answers[path + "!"] = None, _in_words(exc, self._timeouts)

        await asyncio.gather(*(ask(path) for path in paths))
        return read(answers), all(answers[path] is not None for path in paths)

    async def _served_models(self, client: Any, point: Endpoint, memory: _Memory) -> None:
        """`/v1/models` once per endpoint; an engine without it still gives its metrics."""
        try:
            async with asyncio.timeout(self.read_timeout_s):
                text = await self._get(memory, client, point.models_url)
            memory.served = await self._parse(parse_models, text)
        except Exception as exc:  # noqa: BLE001 - optional: retried on the next poll, or later if it was slow
            memory.client_spoilt |= not isinstance(exc, MetricsError)
            if is_timeout(exc):
                memory.models_after = time.monotonic() + MODELS_RETRY_S

    async def _parse(self, parse: Callable[..., Any], text: str, **options: Any) -> Any:
        """Run a parser on the scraper's own thread, so the event loop keeps drawing and taking keys; a payload
        of at most PARSED_ON_LOOP characters on the loop, where it costs less than the hop."""
        if len(text) <= PARSED_ON_LOOP:
            return parse(text, **options)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._parser, lambda: parse(text, **options))

    def _client(self, memory: _Memory) -> Any:
        if memory.client is None:
            memory.client = async_client(
                self._timeouts, connections=CONNECTIONS_PER_ENDPOINT, headers={"Accept": "text/plain"}
            )
            memory.requests = {}
        return memory.client

    @staticmethod
    def _request(memory: _Memory, client: Any, url: str) -> Any:
        """The GET of `url`, built by this endpoint's client once and sent at every poll (building one cost a
        sixth of a request). While the client holds a cookie a server set, each is built anew, so it carries the
        client's cookies as they are then, as a request built for each poll would."""
        if client.cookies or client is not memory.client:  # a client let go meanwhile keeps nothing
            return client.build_request("GET", url)
        if url not in memory.requests:
            memory.requests[url] = client.build_request("GET", url)
        return memory.requests[url]

    async def _get(self, memory: _Memory, client: Any, url: str) -> str:
        status, body = await read_request(client, self._request(memory, client, url), self.max_bytes)
        if status >= 400:
            raise ScrapeError(f"HTTP {status} {reason_phrase(status)}".strip(), status)
        return body.decode("utf-8", errors="replace")


async def _settle(task: asyncio.Future | None) -> None:
    """Cancel a task unless it has ended, and wait until it has: nothing is left running behind."""
    if task is None:
        return
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def _shielded_close(client: Any) -> None:
    """Close a client to the end even when the task closing it is being cancelled."""
    if client is not None:
        await asyncio.shield(asyncio.ensure_future(client.aclose()))


def _in_words(exc: BaseException, timeouts: Timeouts) -> str:
    """A failure as one plain sentence for the screen."""
    if isinstance(exc, MetricsError):
        return str(exc)
    return in_words(exc, timeouts)


def _joined(point: Endpoint) -> dict:
    """What an endpoint's status carries from discovery: its processes and its GPUs' identities."""
    return {"pids": list(point.pids), "devices": list(point.devices or ())}
