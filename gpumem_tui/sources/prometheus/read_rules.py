"""What the fleet reader is handed by its caller: the judge's rules it reads by (diagnosis/fleet/reading.py
has them). The reader asks and joins; whether a node's data is stale and which nodes it reads GPU by GPU are
the judge's to say."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gpumem_tui.sources.prometheus.client import Result
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetGpu, FleetNode, FleetSample, NodeLow

Stale = Callable[[float], bool]
"""Whether a node's newest sample, this many seconds old, says nothing of the node now."""
Totals = dict[str, tuple[float, float]]
"""Card model -> (the largest, the smallest) total MiB of one of its GPUs (card_totals.py)."""


class HeldGpu(Protocol):
    """A GPU as the pod-to-GPU join names it (fleet.GpuIdentity)."""

    @property
    def node(self) -> str: ...
    @property
    def instance(self) -> str | None: ...
    @property
    def pods(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class LookMemo:
    """What a refresh's look decided, kept for the next refresh's (node_part.py): each node's decision, the
    engines' sums, and the settings it was made with (compared by identity). Not the look itself: that holds the
    whole refresh's answers."""

    decided: dict[str, Any]
    planned: dict[str, tuple[int, float]]
    held: dict[str, list[int]]
    settings: tuple[object, ...]


class NodeLook(Protocol):
    """The overview's look at each node of one refresh: each node's `low` as its record is made, and `needs`,
    the nodes to read GPU by GPU, by the label that names them."""

    needs: dict[str, list[str]]
    parts: tuple[object, ...]
    """What the look is made of (its answers, the cards' totals, the join, its settings): a look of the same
    parts looks alike."""

    def with_engines(self, engines: list[FleetEngine], before: LookMemo | None = None) -> None: ...

    def follow(self, before: LookMemo) -> None:
        """Take the last refresh's look's decisions for the nodes that read the same."""

    def memo(self) -> LookMemo:
        """What this look decided, for the next refresh's (`follow`, `with_engines`)."""

    def carry(self, before: LookMemo, needs: Mapping[str, list[str]], moved: set[str]) -> None:
        """`before`'s decisions and `needs` for every node but the `moved` ones (`low` decides those next)."""

    def low(
        self, name: str, gpus: int, cards: Mapping[str, int], unknown: Mapping[str, str], total: int | None
    ) -> NodeLow | None: ...

    def again(self, sample: FleetSample) -> list[FleetNode]: ...

    def kept(self, gpus: list[FleetGpu], sample: FleetSample, identities: Iterable[HeldGpu]) -> list[FleetGpu]: ...


class ReadRules(Protocol):
    """The rules a FleetReader reads by."""

    def stale(self, age_s: float) -> bool: ...

    def looks(
        self, results: Mapping[str, Result], totals: Totals, identities: Iterable[HeldGpu], look: float
    ) -> NodeLook: ...
