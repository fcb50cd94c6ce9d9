"""The real client, with the time each instant query was asked at and each answer of the probe kept: what
tells whether every query of a read was asked at one moment (held_back.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, Result
from gpumem_tui.sources.prometheus.held_back import PROBE


class Asked(PrometheusClient):
    asked: list[tuple[str, float]]
    probed: list[float]

    async def query(self, promql: str, at: float) -> Result:
        answer = await super().query(promql, at)
        self.asked.append((promql, at))
        if promql == PROBE and answer.series:
            self.probed.append(answer.series[0].value)
        return answer


async def asked(url: str, read: Callable[[PrometheusClient], Awaitable[object]]) -> tuple[list, list[float]]:
    """What `read` asked of the server at `url`, each query with its time, and the probe's answers."""
    async with Asked(Connection(url)) as client:
        client.asked, client.probed = [], []
        await read(client)
        return client.asked, client.probed
