"""Scrape every engine endpoint at once over one httpx client; each answers ok, stale or down.

The only module that imports httpx. Timeouts are short (connect ~1 s, read ~2 s, and a total
deadline), the body size is capped, and one endpoint's failure never touches another's result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.sources.engines.endpoints import Endpoint
from gpumem_tui.sources.engines.models_api import ServedModel, merge_models, parse_models
from gpumem_tui.sources.engines.parse import parse_metrics
from gpumem_tui.sources.engines.prometheus import MetricsError
from gpumem_tui.sources.engines.rates import PreemptionRates

MAX_BYTES = 8 * 2**20

# httpx is imported where a scraper is built, not at module level: `import httpx` also loads its optional
# command-line tool, which pulls in rich, click and pygments whenever they are installed, and the core
# must not load rich (tests/test_import_rules.py).


class ScrapeError(Exception):
    """Why one endpoint gave no usable answer, in words."""


@dataclass
class _Memory:
    """What the scraper keeps per endpoint between polls."""

    last_good: list[EngineRecord] | None = None
    last_good_at: float = 0.0
    served: list[ServedModel] | None = None
    rates: PreemptionRates = field(default_factory=PreemptionRates)


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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoints = list(endpoints)
        self.connect_timeout_s, self.read_timeout_s = connect_timeout_s, read_timeout_s
        self.max_bytes, self.stale_limit_s, self.clock = max_bytes, stale_limit_s, clock
        self._memory = {e.url: _Memory() for e in self.endpoints}
        import httpx

        timeout = httpx.Timeout(
            connect=connect_timeout_s, read=read_timeout_s, write=read_timeout_s, pool=connect_timeout_s
        )
        self._client = httpx.AsyncClient(
            timeout=timeout,
            follow_redirects=True,
            max_redirects=5,
            trust_env=False,
            headers={"Accept": "text/plain"},
        )

    async def __aenter__(self) -> Scraper:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def scrape(self) -> list[EndpointStatus]:
        """One poll of every endpoint, in the order given."""
        return list(await asyncio.gather(*(self._poll(e) for e in self.endpoints)))

    async def _poll(self, point: Endpoint) -> EndpointStatus:
        memory = self._memory.setdefault(point.url, _Memory())
        deadline = self.connect_timeout_s + self.read_timeout_s + 1.0
        try:
            records = await asyncio.wait_for(self._fetch(point, memory), timeout=deadline)
        except Exception as exc:  # noqa: BLE001 - any failure degrades this endpoint only
            return self._failed(point, memory, _in_words(exc, self))
        now = self.clock()
        memory.last_good, memory.last_good_at = memory.rates.apply(records, now), now
        return EndpointStatus(url=point.url, state="ok", age_s=0.0, pids=list(point.pids), records=memory.last_good)

    def _failed(self, point: Endpoint, memory: _Memory, error: str) -> EndpointStatus:
        age = self.clock() - memory.last_good_at
        if memory.last_good is not None and age <= self.stale_limit_s:
            return EndpointStatus(
                url=point.url,
                state="stale",
                error=error,
                age_s=age,
                pids=list(point.pids),
                records=memory.last_good,
            )
        return EndpointStatus(url=point.url, state="down", error=error, pids=list(point.pids))

    async def _fetch(self, point: Endpoint, memory: _Memory) -> list[EngineRecord]:
        metrics_task = asyncio.ensure_future(self._get(point.metrics_url))
        if not memory.served:  # none yet, or an empty list from an engine still loading: ask again
            memory.served = await self._served_models(point)
        records = parse_metrics(await metrics_task, endpoint=point.url)
        return merge_models(records, memory.served) if memory.served else records

    async def _served_models(self, point: Endpoint) -> list[ServedModel] | None:
        """`/v1/models` once per endpoint; an engine without it still gives its metrics."""
        try:
            return parse_models(await self._get(point.models_url))
        except Exception:  # noqa: BLE001 - optional: retried on the next poll
            return None

    async def _get(self, url: str) -> str:
        async with self._client.stream("GET", url) as response:
            if response.status_code >= 400:
                raise ScrapeError(f"HTTP {response.status_code} {response.reason_phrase}".strip())
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > self.max_bytes:
                raise ScrapeError(f"payload of {int(declared):,} bytes is over the {self.max_bytes:,}-byte limit")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self.max_bytes:
                    raise ScrapeError(f"payload is over the {self.max_bytes:,}-byte limit")
        return body.decode("utf-8", errors="replace")


def _in_words(exc: BaseException, scraper: Scraper) -> str:
    """A failure as one plain sentence for the screen."""
    import httpx

    if isinstance(exc, ScrapeError | MetricsError):
        return str(exc)
    if isinstance(exc, httpx.ConnectTimeout):
        return f"no connection within {scraper.connect_timeout_s:g} s"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect ({_reason(exc)})"
    if isinstance(exc, httpx.ReadTimeout | asyncio.TimeoutError | TimeoutError):
        return f"connected but no answer within {scraper.read_timeout_s:g} s"
    if isinstance(exc, httpx.TooManyRedirects):
        return "too many redirects (a redirect loop?)"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"connection broke mid-answer ({_reason(exc)})"
    if isinstance(exc, httpx.HTTPError | OSError):
        return f"{type(exc).__name__}: {_reason(exc)}"
    return f"unexpected {type(exc).__name__}: {_reason(exc)}"


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."
