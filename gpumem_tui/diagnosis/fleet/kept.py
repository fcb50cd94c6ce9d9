"""A judgement of a sample's engines kept while the facts it reads of them stay: the fleet screen judges 10^4
engines every 15 s, and their gauges move with every scrape while their node, GPUs, utilization and settings
stay, so a part that reads only those answers as it did."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from operator import attrgetter
from typing import TypeVar

from gpumem_tui.sources.prometheus.records import FleetEngine

T = TypeVar("T")
_KEPT: list[list[object]] = []
"""Each kept function's last answer, to let go of them all (`forget`)."""


def kept_by(*names: str) -> Callable[[Callable[[list[FleetEngine]], T]], Callable[[list[FleetEngine]], T]]:
    """The function of the engines kept with the engines' `names` it was made from: its last answer itself
    where they read the same, in the same order (so an answer is shared: read it, never change it). One
    answer is kept, replaced whole: a reader and a judge in two threads may ask at once."""
    facts_of = attrgetter(*names)

    def keep(made: Callable[[list[FleetEngine]], T]) -> Callable[[list[FleetEngine]], T]:
        last: list[tuple[list[tuple[object, ...]], T]] = []
        _KEPT.append(last)  # type: ignore[arg-type]

        @wraps(made)
        def kept(engines: list[FleetEngine]) -> T:
            facts = list(map(facts_of, engines))
            was = next(iter(last), None)  # `forget` may clear it meanwhile
            if was is not None and was[0] == facts:
                return was[1]
            answer = made(engines)
            last[:] = [(facts, answer)]
            return answer

        return kept

    return keep


def forget() -> None:
    """Every kept answer let go (a judge from nothing, as the first sample's)."""
    for last in _KEPT:
        last.clear()
