"""What of a fleet engine stays while its pool and join do: its name's parts, node, model, GPUs, planned share
and cache settings (its gauges move with every scrape). The reader's nodes and the fleet's judge compare these
from one sample to the next, and keep what they made of them while they read the same."""

from __future__ import annotations

from operator import attrgetter

from gpumem_tui.sources.prometheus.records import FleetEngine

_STABLE = attrgetter(
    "node", "namespace", "pod", "instance", "engine", "model_name", "gpu_memory_utilization", "joined", "gpus",
    "settings",
)  # fmt: skip
_LAST: list[tuple[list[FleetEngine], list[tuple[object, ...]]]] = []
"""The last list asked of and its answer (one, replaced whole: a reader and a judge in two threads may ask)."""


def stable(engines: list[FleetEngine]) -> list[tuple[object, ...]]:
    """Each engine's fields that stay, in order; made once for one list (the judge's parts all ask it of the
    sample's engines)."""
    last = next(iter(_LAST), None)
    if last is not None and last[0] is engines:
        return last[1]
    facts = list(map(_STABLE, engines))
    _LAST[:] = [(engines, facts)]
    return facts
