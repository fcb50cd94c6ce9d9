"""How far behind the asked time a server answers. VictoriaMetrics evaluates an instant query as of
`-search.latencyOffset` (30 s by default) before the time asked where that time is closer to now, so its
newest 30 s of samples are hidden and `time()` itself is 30 s behind; Prometheus evaluates at the time asked.
One `vector(time())` query at the time asked measures it, whatever the server is called. Read once per reader
and again with its slow facts: a server's setting, not the fleet's."""

from __future__ import annotations

from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError

PROBE = "vector(time())"


async def held_back_s(client: PrometheusClient, at: float) -> float | None:
    """Seconds the server's evaluation time is behind `at` (0 where it evaluates at `at`); None where the probe
    has no answer (a proxy that refuses it, a server that is down: the read itself says so)."""
    try:
        answer = await client.query(PROBE, at)
    except PrometheusError:
        return None
    if len(answer.series) != 1:
        return None
    return float(max(0, round(at - answer.series[0].value)))  # whole seconds: the server may round `at`
