"""Which nodes the overview reads GPU by GPU, and what it counts on the others (a node's `low`), decided for
each node as its record is made (fleet_nodes.nodes_of): a node needs a look when a figure is missing or not a
number, its cards' totals are unknown or differ, the count was not read, its GPUs under the fraction are not
as its engines planned (headroom.py), or it is shared (a model's engines hold some of its GPUs but not all, or
a pod holds one of its MIG GPU instances). docs/design/fleet.md says why."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from gpumem_tui.diagnosis.findings.records import Thresholds
from gpumem_tui.diagnosis.fleet.headroom import as_planned_low, node_shares
from gpumem_tui.sources.prometheus.client import Result
from gpumem_tui.sources.prometheus.labels import node_label_of, node_of
from gpumem_tui.sources.prometheus.read_rules import HeldGpu, LookMemo, Totals
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetGpu, FleetNode, FleetSample, NodeLow
from gpumem_tui.units import MIB

MEMORY_FIELDS = ("used_bytes", "free_bytes", "reserved_bytes", "total_bytes")
"""A node's figures whose absence calls for a look (not other processes' memory)."""


@dataclass(frozen=True, slots=True)
class Decided:
    """What the look read of a node (its figures, least free, count under the fraction, engines' shares and
    holds), its `low`, and the label it is read one by one by (None: it is not), with the labels that said so."""

    read: tuple
    low: NodeLow | None
    label: str | None = None
    labels: Mapping[str, str] | None = None


class Looks:
    """The overview's look at each node of one refresh (sources/prometheus/read_rules.NodeLook). `results`: the
    refresh's answers (`node_least_free`, `node_low`); `totals`: `card_totals` of the slow facts; `identities`:
    the join's GPUs, for the MIG instances pods hold. `with_engines` first, then `low` per node; `needs` then
    names the nodes to read one by one, by the label that names them."""

    def __init__(
        self,
        results: Mapping[str, Result],
        totals: Totals,
        identities: Iterable[HeldGpu],
        look: float,
        thresholds: Thresholds,
    ) -> None:
        self.results = results
        self.counted = "node_low" in results
        self.totals, self.look, self.thresholds = totals, look, thresholds
        self.identities = identities
        self.parts: tuple[object, ...] = (
            *(results.get(name) for name in ("node_least_free", "node_low")),
            totals,
            identities,
            look,
            thresholds,
        )
        """What the look is made of, compared by identity (node_part.py)."""
        self.needs: dict[str, list[str]] = {}
        self.planned: dict[str, tuple[int, float]] = {}
        self.held: dict[str, list[int]] = {}
        self.decided: dict[str, Decided] = {}
        """Node -> what `low` read of it and decided (its `low`, and the label it is read one by one by)."""
        self.before: dict[str, Decided] = {}
        """The last refresh's look's `decided`, where it was made with the same settings (`follow`)."""

    @cached_property
    def mig(self) -> set[str]:
        """The nodes where a pod holds a MIG GPU instance."""
        return _mig(self.identities)

    @cached_property
    def least(self) -> dict[str, dict[str, float]]:
        """Node -> card -> the least free MiB of one of its GPUs (`node_least_free`)."""
        least: dict[str, dict[str, float]] = {}
        for s in self.results.get("node_least_free", Result()).series:
            if (name := node_of(s.labels)) is not None:
                least.setdefault(name, {})[s.labels.get("modelName") or "?"] = s.value
        return least

    @cached_property
    def labels(self) -> dict[str, Mapping[str, str]]:
        """A series of each node's (its labels): which of them names the node, for a node that needs a look."""
        series = self.results.get("node_least_free", Result()).series
        return {name: s.labels for s in series if (name := node_of(s.labels)) is not None}

    @cached_property
    def counts(self) -> dict[str, dict[str, int]]:
        """Node -> card -> its GPUs under the fraction (`node_low`)."""
        counts: dict[str, dict[str, int]] = {}
        for s in self.results.get("node_low", Result()).series:
            if (name := node_of(s.labels)) is not None and math.isfinite(s.value) and s.value >= 0:  # NaN: no count
                counts.setdefault(name, {})[s.labels.get("modelName") or "?"] = int(s.value)
        return counts

    def with_engines(self, engines: list[FleetEngine], before: LookMemo | None = None) -> None:
        """What the node's engines plan (headroom.node_shares: per node, how many GPUs a joined engine states its
        utilization for, and the smallest), and how many GPUs each model's engines hold on each node; `before`:
        a look whose engines read the same, whose sums are taken."""
        if before is not None:
            self.planned, self.held = before.planned, before.held
            return
        self.planned = {node: (len(mine), min(mine.values())) for node, mine in node_shares(engines).items() if mine}
        self.held = _held(engines)

    def follow(self, before: LookMemo) -> None:
        """`before`'s decisions taken for the nodes whose inputs read the same, where it is a look of the same
        settings, answers aside (the cards' totals, the join, the share, the thresholds, the count read)."""
        if all(map(operator.is_, before.settings, self._settings())):
            self.before = before.decided

    def memo(self) -> LookMemo:
        return LookMemo(self.decided, self.planned, self.held, self._settings())

    def carry(self, before: LookMemo, needs: Mapping[str, list[str]], moved: set[str]) -> None:
        """`before`'s decisions and `needs` taken for every node but the `moved` ones, which `low` decides next."""
        self.decided = {name: d for name, d in before.decided.items() if name not in moved}
        self.needs = {label: [n for n in names if n not in moved] for label, names in needs.items()}

    def _settings(self) -> tuple[object, ...]:
        return (self.counted, *self.parts[2:])

    def low(
        self, name: str, gpus: int, cards: Mapping[str, int], unknown: Mapping[str, str], total: int | None
    ) -> NodeLow | None:
        """The node's GPUs under the fraction where its engines planned them so (None: none, or the node needs a
        look, which `needs` then says). Decided as `before` decided it where the node read the same."""
        least, counts = self.least.get(name, {}), self.counts.get(name, {})
        read = (gpus, cards, unknown, total, least, counts, self.planned.get(name), self.held.get(name))
        was = self.before.get(name)
        if was is not None and was.read == read and (was.label is None or was.labels == self.labels.get(name)):
            decided = was
        else:
            decided = self._decided(name, read)
        self.decided[name] = decided
        if decided.label is not None:
            self.needs.setdefault(decided.label, []).append(name)
        return decided.low

    def _decided(self, name: str, read: tuple) -> Decided:
        gpus, cards, unknown, total, least, counts, *_ = read
        found = self._found(gpus, cards, unknown, total, least, counts)
        shared = _shared(name, gpus, self.mig, self.held)
        if found is None and not shared:
            return Decided(read, None)
        if isinstance(found, NodeLow) and not shared and self._as_planned(name, found, gpus):
            return Decided(read, found)
        labels = self.labels.get(name)
        return Decided(read, None, "Hostname" if labels is None else node_label_of(labels), labels)

    def again(self, sample: FleetSample) -> list[FleetNode]:
        """The sample's nodes looked at again, each with its `low` (a copy where it changes): where something
        changed the records after they were made (a node's own gpumem-tui export adds GPUs and engines)."""
        self.needs = {}
        self.with_engines(sample.engines)
        nodes = []
        for node in sample.nodes:
            low = self.low(node.name, node.gpus, node.cards, node.unknown, node.total_bytes)
            nodes.append(node if low is None and node.low is None else node.model_copy(update={"low": low}))
        return nodes

    def kept(self, gpus: list[FleetGpu], sample: FleetSample, identities: Iterable[HeldGpu]) -> list[FleetGpu]:
        """Of the GPUs read one by one on the nodes that need a look, those the sample lists: every GPU of a
        shared node (a model's memory used is then a sum of its GPUs or instances), else those with a figure
        missing or free memory under the look share."""
        named = {name for names in self.needs.values() for name in names}
        held = _held(sample.engines)
        shared = _mig(identities) | {n.name for n in sample.nodes if _shared(n.name, n.gpus, set(), held)}
        return [g for g in gpus if g.node in named and (g.node in shared or _under(g, self.look))]

    def _as_planned(self, name: str, low: NodeLow, gpus: int) -> bool:
        """headroom.as_planned_low, with the node's shares as `with_engines` summed them."""
        count, least = self.planned.get(name, (0, 0.0))
        return as_planned_low(low, gpus, count, least, self.thresholds)

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


def _mig(identities: Iterable[HeldGpu]) -> set[str]:
    """The nodes where a pod holds a MIG GPU instance."""
    return {gpu.node for gpu in identities if gpu.instance is not None and gpu.pods}


def _held(engines: list[FleetEngine]) -> dict[str, list[int]]:
    """Node -> how many of its GPUs each model's engines hold (a model that holds none left out)."""
    held: dict[tuple[str, str], set[str]] = {}
    for engine in engines:
        if engine.node is not None:
            held.setdefault((engine.node, engine.model_name), set()).update(engine.gpus)
    found: dict[str, list[int]] = {}
    for (node, _), gpus in held.items():
        if gpus:
            found.setdefault(node, []).append(len(gpus))
    return found


def _shared(name: str, gpus: int, mig: set[str], held: Mapping[str, list[int]]) -> bool:
    """A node of `gpus` GPUs is shared where a pod holds one of its MIG GPU instances, or a model's engines hold
    some of its GPUs but not all."""
    return name in mig or any(0 < count < gpus for count in held.get(name, ()))


def _under(gpu: FleetGpu, look: float) -> bool:
    """A figure is missing, or the free memory is under the look share."""
    if gpu.free_bytes is None or gpu.total_bytes is None:
        return True
    return gpu.free_bytes < look * gpu.total_bytes
