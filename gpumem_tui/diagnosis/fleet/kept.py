"""A judgement of a sample's engines kept while what stays of them reads the same (engine_stable.py): the fleet
screen judges 10^4 engines every 15 s, and their gauges move with every scrape while their node, GPUs,
utilization and settings stay, so a part that reads only those answers as it did."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Protocol, TypeVar

from gpumem_tui.sources.prometheus.engine_stable import stable
from gpumem_tui.sources.prometheus.records import FleetEngine

T = TypeVar("T")
KEPT_ANSWERS = 2
"""Answers kept of each function: one for the fleet's sample, one for a node's read beside it."""


class Clears(Protocol):
    def clear(self) -> None: ...


_KEPT: list[Clears] = []
"""Each kept function's last answers and each memo `held`, to let go of them all (`forget`)."""
M = TypeVar("M", bound=Clears)


def held(memo: M) -> M:
    """`memo` let go with the kept answers (`forget`)."""
    _KEPT.append(memo)
    return memo


def kept(made: Callable[[list[FleetEngine]], T]) -> Callable[[list[FleetEngine]], T]:
    """A function of the engines that reads only what stays of them, kept: its last answers themselves where that
    reads the same, in the same order (so an answer is shared: read it, never change it). Two answers are kept,
    the list replaced whole: the fleet screen's worker and a node's screen over the same Prometheus judge samples
    of their own, maybe in two threads at once."""
    last: list[tuple[list[tuple[object, ...]], T]] = []
    _KEPT.append(last)

    @wraps(made)
    def keep(engines: list[FleetEngine]) -> T:
        if not engines:  # nothing to keep (a node's exporters' findings judged alone): no answer pushed out
            return made(engines)
        facts = stable(engines)
        were = last[:]  # `forget` may clear it meanwhile
        for was in were:
            if was[0] == facts:
                return was[1]
        answer = made(engines)
        last[:] = [(facts, answer), *were[: KEPT_ANSWERS - 1]]
        return answer

    return keep


def forget() -> None:
    """Every kept answer let go (a judge from nothing, as the first sample's)."""
    for last in _KEPT:
        last.clear()
