"""How far behind the asked time a server answers, and the moment to ask a read's queries at. VictoriaMetrics
evaluates an instant query as of `-search.latencyOffset` (30 s by default) before the time asked where that time
is closer to now, so its newest 30 s of samples are hidden; Prometheus evaluates at the time asked. One
`vector(time())` query at the time asked measures it. The server moves each query back from its own arrival, so a
read asks all its queries at the moment the probe was answered as of, which the server keeps as asked: one
moment for the whole read (docs/fleet.md, VictoriaMetrics)."""

from __future__ import annotations

import math
from typing import NamedTuple

from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError
from gpumem_tui.sources.prometheus.queries import LOOK_BACK_S

PROBE = "vector(time())"
MOST_HELD_S = LOOK_BACK_S
"""The most a hold-back can be: a server setting of seconds (VictoriaMetrics' 30 s). An answer further back than
the fleet looks for a node at all (the hour) is spoilt (a proxy's, a clock of 1970): asked there, the read would
hold nothing of the time asked."""
SAID_FROM_S = 1.0
"""A hold-back under this is the server's rounding of the time asked, not a setting."""


class Moment(NamedTuple):
    """When to ask a read's queries (`asked`), and the seconds the server answers behind the time asked (`held_s`:
    whole seconds, 0 where it answers at it; None where the probe has no answer or a spoilt one, not a number or
    over MOST_HELD_S: a proxy that refuses or mangles it, a server that is down, which the read itself says)."""

    asked: float
    held_s: float | None


async def moment(client: PrometheusClient, at: float) -> Moment:
    """The moment to ask a read at `at` at: `at` itself, or where the server answers behind it, the moment it
    answered the probe as of (its own clock's: a client's clock ahead of the server's moves nothing)."""
    try:
        answer = await client.query(PROBE, at)
    except PrometheusError:
        return Moment(at, None)
    if len(answer.series) != 1 or not math.isfinite(answer.series[0].value):
        return Moment(at, None)
    held = float(max(0, round(at - answer.series[0].value)))  # whole seconds: the server may round `at`
    if held > MOST_HELD_S:
        return Moment(at, None)
    return Moment(answer.series[0].value if held else at, held)


def answers_as_of(held_s: float) -> str | None:
    """What a hold-back means, in the words the fleet's data age and the node's notes share; None under
    SAID_FROM_S."""
    if held_s < SAID_FROM_S:
        return None
    return f"the server answers as of {held_s:.0f} s ago (VictoriaMetrics' -search.latencyOffset)"
