"""Which nodes the overview reads GPU by GPU, and what it counts on the others: decided for each node as its
record is made (fleet_nodes.nodes_of), so a refresh of 1,000 nodes makes each node's record once, with its
`low`, rather than making it and copying it with its count.

A node needs a look (its GPUs read one by one) when a memory figure is missing or not a number, a card's
total is unknown or differs between its GPUs (then the count's bound is not theirs), the count was not read,
its GPUs under the fraction are not as its engines planned (headroom.py), or a model's engines hold some of
its GPUs but not all, or a pod holds one of its MIG GPU instances (a model's memory used is then the sum of
its GPUs or instances; elsewhere its node's sums)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from gpumem_tui.sources.prometheus.client import Result
from gpumem_tui.sources.prometheus.headroom import Headroom, as_planned_gpu, node_shares
from gpumem_tui.sources.prometheus.labels import node_label_of, node_of
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetNode, FleetSample, NodeLow
from gpumem_tui.units import MIB

MEMORY_FIELDS = ("used_bytes", "free_bytes", "reserved_bytes", "total_bytes")
"""A node's figures whose absence calls for a look (not other processes' memory)."""


def card_totals(answer: Result) -> dict[str, tuple[float, float]]:
    """Card model -> (the largest, the smallest) total MiB of one of its GPUs, from `card_totals`."""
    found: dict[str, list[float]] = {}
    for s in answer.series:
        try:
            total = float(s.labels.get("total", "nan"))
        except ValueError:
            continue
        if s.labels.get("modelName") and math.isfinite(total):
            found.setdefault(s.labels["modelName"], []).append(total)
    return {card: (max(totals), min(totals)) for card, totals in found.items()}


def low_bounds(answer: Result, look: float) -> dict[str, float]:
    """Card model -> the free MiB under which a GPU of the card's largest total is low (a node whose GPUs of
    the card have a smaller total, such as an exporter without FB_RESERVED, is read one by one where low)."""
    return {card: look * big for card, (big, _) in card_totals(answer).items() if big > 0}


class Looks:
    """The overview's look at each node of one refresh. `results`: the refresh's answers (`node_least_free`,
    `node_low`); `totals`: `card_totals` of the slow facts; `identities`: the join's GPUs (GpuIdentity), for
    the MIG instances pods hold. `with_engines` first, then `low` per node; `needs` then names the nodes to
    read one by one, by the label that names them."""

    def __init__(
        self,
        results: Mapping[str, Result],
        totals: dict[str, tuple[float, float]],
        identities: Iterable[Any],
        look: float,
        headroom: Headroom,
    ) -> None:
        self.least: dict[str, dict[str, float]] = {}
        self.labels: dict[str, Mapping[str, str]] = {}
        """A series of each node's (its labels): which of them names the node, for a node that needs a look."""
        for s in results.get("node_least_free", Result()).series:
            if (name := node_of(s.labels)) is not None:
                self.least.setdefault(name, {})[s.labels.get("modelName") or "?"] = s.value
                self.labels[name] = s.labels
        self.counts: dict[str, dict[str, int]] = {}
        for s in results.get("node_low", Result()).series:
            if (name := node_of(s.labels)) is not None:
                self.counts.setdefault(name, {})[s.labels.get("modelName") or "?"] = int(s.value)
        self.counted = "node_low" in results
        self.totals, self.look, self.headroom = totals, look, headroom
        self.mig = {gpu.node for gpu in identities if gpu.instance is not None and gpu.pods}
        self.needs: dict[str, list[str]] = {}
        self.planned: dict[str, tuple[int, float]] = {}
        self.held: dict[str, list[int]] = {}

    def with_engines(self, engines: list[FleetEngine]) -> None:
        """What the node's engines plan (headroom.node_shares: per node, how many GPUs a joined engine states its
        utilization for, and the smallest), and how many GPUs each model's engines hold on each node."""
        self.planned = {node: (len(mine), min(mine.values())) for node, mine in node_shares(engines).items() if mine}
        held: dict[tuple[str, str], set[str]] = {}
        for engine in engines:
            if engine.node is not None:
                held.setdefault((engine.node, engine.model_name), set()).update(engine.gpus)
        self.held = {}
        for (node, _), gpus in held.items():
            if gpus:
                self.held.setdefault(node, []).append(len(gpus))

    def low(
        self, name: str, gpus: int, cards: Mapping[str, int], unknown: Mapping[str, str], total: int | None
    ) -> NodeLow | None:
        """The node's GPUs under the fraction where its engines planned them so (None: none, or the node needs a
        look, which `needs` then says)."""
        found = self._found(gpus, cards, unknown, total, self.least.get(name, {}), self.counts.get(name, {}))
        shared = name in self.mig or any(0 < held < gpus for held in self.held.get(name, ()))
        if found is None and not shared:
            return None
        if isinstance(found, NodeLow) and not shared and self._as_planned(name, found, gpus):
            return found
        labels = self.labels.get(name)
        self.needs.setdefault("Hostname" if labels is None else node_label_of(labels), []).append(name)
        return None

    def judge(self, sample: FleetSample) -> list[FleetNode]:
        """The sample's nodes looked at again, each with its `low` (a copy where it changes): where something
        changed the records after they were made (a node's own gpumem-tui export adds GPUs and engines)."""
        self.needs = {}
        self.with_engines(sample.engines)
        nodes = []
        for node in sample.nodes:
            low = self.low(node.name, node.gpus, node.cards, node.unknown, node.total_bytes)
            nodes.append(node if low is None and node.low is None else node.model_copy(update={"low": low}))
        return nodes

    def _as_planned(self, name: str, low: NodeLow, gpus: int) -> bool:
        """headroom.as_planned_low, with the node's shares as `with_engines` summed them."""
        count, least = self.planned.get(name, (0, 0.0))
        if not gpus or count < gpus:
            return False
        return as_planned_gpu(low.least_free_bytes, low.least_free_total_bytes, least, self.headroom)

    def _found(
        self,
        gpus: int,
        cards: Mapping[str, int],
        unknown: Mapping[str, str],
        total: int | None,
        least: Mapping[str, float],
        counts: Mapping[str, int],
    ) -> NodeLow | None | bool:
        """The node's GPUs under the fraction (None: none), or False when it needs a look: a figure missing or
        not a number, GPUs whose total is not the card's largest (then the count's bound is not theirs), the
        count not read. A node of one card has the largest total on every GPU when its total is that many
        times it (the mean of totals that are each at most the largest)."""
        if not gpus:
            return None
        for field in MEMORY_FIELDS:
            why = unknown.get(field)
            if why is not None and not why.startswith("n/a"):
                return False
        look, fractions, under = self.look, [], 0
        for card in cards:
            free = least.get(card)
            big, small = self.totals.get(card, (math.nan, math.nan))
            if free is None or not math.isfinite(free) or not big > 0:
                return False
            same = big == small or (len(cards) == 1 and total == gpus * round(big * MIB))
            if not same or not self.counted:
                if free < look * big:
                    return False
                continue
            under += counts.get(card, 0)
            fractions.append((free / big, free, big))
        if not under:
            return None
        _, free, big = min(fractions)
        return NodeLow(gpus=under, least_free_bytes=round(free * MIB), least_free_total_bytes=round(big * MIB))
