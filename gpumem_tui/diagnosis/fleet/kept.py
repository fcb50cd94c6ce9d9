"""A judgement of a sample's engines kept while what stays of them reads the same (engine_stable.py): the fleet
screen judges 10^4 engines every 15 s, and their gauges move with every scrape while their node, GPUs,
utilization and settings stay, so a part that reads only those answers as it did."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TypeVar

from gpumem_tui.sources.prometheus.engine_stable import stable
from gpumem_tui.sources.prometheus.records import FleetEngine

T = TypeVar("T")
_KEPT: list[list[object]] = []
"""Each kept function's last answer, to let go of them all (`forget`)."""


def kept(made: Callable[[list[FleetEngine]], T]) -> Callable[[list[FleetEngine]], T]:
    """A function of the engines that reads only what stays of them, kept: its last answer itself where that
    reads the same, in the same order (so an answer is shared: read it, never change it). One answer is kept,
    replaced whole: a reader and a judge in two threads may ask at once."""
    last: list[tuple[list[tuple[object, ...]], T]] = []
    _KEPT.append(last)  # type: ignore[arg-type]

    @wraps(made)
    def keep(engines: list[FleetEngine]) -> T:
        facts = stable(engines)
        was = next(iter(last), None)  # `forget` may clear it meanwhile
        if was is not None and was[0] == facts:
            return was[1]
        answer = made(engines)
        last[:] = [(facts, answer)]
        return answer

    return keep


def forget() -> None:
    """Every kept answer let go (a judge from nothing, as the first sample's)."""
    for last in _KEPT:
        last.clear()
