"""A sample's nodes and what it says of them besides (their ages, the stale ones, the look's `needs`), kept
whole where every answer they are made of is the object the last refresh made them of: between two evaluations
of the recording rules (kept_recorded.py), with the slow facts kept, only the engines' gauges move, and the
nodes never read those. At 10,000 nodes that is 0.2 s of a refresh not spent making the same records."""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from gpumem_tui.records import updated
from gpumem_tui.sources.prometheus.client import Result, Series
from gpumem_tui.sources.prometheus.engine_stable import stable
from gpumem_tui.sources.prometheus.fleet_engines import Counts
from gpumem_tui.sources.prometheus.fleet_nodes import FIELDS, NodeMemo, Shape, Sums, nodes_of, same_age
from gpumem_tui.sources.prometheus.labels import EXPORTER_POD, node_of, per_node
from gpumem_tui.sources.prometheus.read_rules import LookMemo, NodeLook, Stale
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetGpu, FleetNode
from gpumem_tui.units import MIB

EMPTY = Result()
ANSWERS = ("node_memory", "node_reserved", "nodes_age", "nodes_seen", "gpu_memory", "gpu_instances")
"""The answers a node's record is made of, beside the counts (`node_gpus`, a slow fact) and the look's (the
GPUs' where no node query answered)."""
AGES = 2 + ANSWERS.index("nodes_age")
"""Where the ages' answer is in what a part is made of (`node_part`'s `parts`)."""


@dataclass(frozen=True)
class NodePart:
    """The sample's nodes, their ages (newest sample, s), the stale ones (age, None: only seen in the hour),
    the age of the freshest data, warnings about node names, and the nodes the look reads GPU by GPU."""

    nodes: list[FleetNode]
    stale: dict[str, float | None]
    data_age_s: float | None
    warnings: list[str]
    needs: dict[str, list[str]]


@dataclass
class NodesKept:
    """What the last refresh made its nodes of, and what it made (kept by the overview's reader)."""

    parts: tuple[object, ...] = ()
    """The objects they were made of, compared by identity."""
    same: tuple[object, ...] = ()
    """What they were made of that is compared by value (the engines as the nodes read them, the stale rule)."""
    part: NodePart | None = None
    look: LookMemo | None = None
    """What the look the part was made with decided: a later look takes it where the nodes read the same."""
    made: NodeMemo = field(default_factory=dict)
    """Each node's record, for a refresh whose answers moved (fleet_nodes.nodes_of)."""
    ages: dict[str, float] = field(default_factory=dict)
    """Each node's age as the part has it."""
    sums: tuple[object, object, Sums] | None = None
    """The node sums of the last refresh, and the `node_memory` and `node_reserved` answers they were made of:
    kept where only the ages moved (the rules' figures kept whole: kept_recorded.py)."""
    how: str = ""
    """How the last part was made: `kept`, `aged` (the kept one at new ages), `moved` (only the nodes whose
    series are not the kept ones made again), `made` (every node)."""


def node_part(
    results: Mapping[str, Result],
    counts: Counts,
    sums: Sums | None,
    shapes: Mapping[str, Shape] | None,
    engines: list[FleetEngine],
    looks: NodeLook | None,
    stale: Stale,
    kept: NodesKept | None = None,
) -> NodePart:
    """The sample's nodes from the answers (`sums`: the node sums where they are not the answers', the GPUs'
    as canned answers give them; None: read from `node_memory` and `node_reserved`). `kept`: the last refresh's,
    whose part is returned where it was made of the same (then `looks.needs` is set from it)."""
    parts = (counts, shapes, *(results.get(name) for name in ANSWERS), *(() if looks is None else looks.parts))
    same = (stable(engines), stale, sums is None)
    engines_alike = False  # the engines as the nodes read them, compared once (10,000 of them: 10-14 ms)
    if kept is not None and kept.part is not None:
        engines_alike = same[0] == kept.same[0]
        if engines_alike and same[1:] == kept.same[1:]:
            part = _kept(results, parts, engines, looks, stale, kept)
            if part is not None:
                return part
    if sums is None:
        sums = _node_sums(results.get("node_memory", EMPTY), results.get("node_reserved", EMPTY), kept)
    ages = per_node(results.get("nodes_age", EMPTY).series, min)  # the age of its newest sample
    seen = {node for s in results.get("nodes_seen", EMPTY).series if (node := node_of(s.labels)) is not None}
    before = kept.look if kept is not None else None
    if looks is not None:  # the last look's sums where the engines read the same, its decisions where nodes do
        looks.with_engines(engines, before if engines_alike else None)
        if before is not None:
            looks.follow(before)
    nodes = nodes_of(counts, sums, engines, ages, seen, shapes, looks, None if kept is None else kept.made)
    old: dict[str, float | None] = {n: a for n, a in ages.items() if stale(a)}
    old |= dict.fromkeys(seen - set(ages))
    fresh = [a for n, a in ages.items() if n not in old]
    needs = {} if looks is None else {label: list(names) for label, names in looks.needs.items()}
    part = NodePart(nodes, old, max(fresh) if fresh else None, _exporter_pods(set(counts) | seen), needs)
    if kept is not None:
        kept.parts, kept.same, kept.part, kept.look = parts, same, part, None if looks is None else looks.memo()
        kept.ages, kept.how = ages, "made"
    return part


def _kept(
    results: Mapping[str, Result],
    parts: tuple[object, ...],
    engines: list[FleetEngine],
    looks: NodeLook | None,
    stale: Stale,
    kept: NodesKept,
) -> NodePart | None:
    """The kept part where the nodes are made of the same (at the ages read now), or with the nodes whose series
    moved made again (`_moved`); None: every node made anew."""
    assert kept.part is not None
    if not _same(parts, kept.parts, AGES):
        return _moved(results, parts, engines, looks, stale, kept) if kept.same[2] else None
    part = kept.part if parts[AGES] is kept.parts[AGES] else _aged(results, stale, kept)
    if part is not None:
        if looks is not None:
            looks.needs = {label: list(names) for label, names in kept.part.needs.items()}
        kept.parts, kept.part, kept.how = parts, part, "kept" if part is kept.part else "aged"
    return part


MOVING = (2 + ANSWERS.index("node_memory"), AGES, 2 + len(ANSWERS), 3 + len(ANSWERS))
"""Where in a part's `parts` the answers are whose nodes may be made again alone (`_moved`): the memory, the ages,
and the look's least free and count under the fraction."""


def _moved(
    results: Mapping[str, Result],
    parts: tuple[object, ...],
    engines: list[FleetEngine],
    looks: NodeLook | None,
    stale: Stale,
    kept: NodesKept,
) -> NodePart | None:
    """The kept part with only the nodes some of whose series are not the kept answers' objects made again (a
    patched answer holds every other node's very series: kept_recorded.py), at the ages read now. None where
    something else moved, a node came or went, or half the nodes moved (an answer read whole): made anew."""
    assert kept.part is not None
    differ = [i for i, (a, b) in enumerate(zip(parts, kept.parts, strict=False)) if a is not b]
    if len(parts) != len(kept.parts) or set(differ) - set(MOVING) or kept.sums is None or kept.look is None:
        return None
    memory, reserved = results.get("node_memory", EMPTY), results.get("node_reserved", EMPTY)
    if kept.sums[1] is not reserved:
        return None
    moved = set()
    for i in (i for i in differ if i != AGES):
        names = _nodes_apart(parts[i], kept.parts[i])
        if names is None:
            return None
        moved |= names
    ages = kept.ages if AGES not in differ else per_node(results.get("nodes_age", EMPTY).series, min)
    if not moved <= kept.made.keys() or 2 * len(moved) > len(kept.made) or ages.keys() != kept.ages.keys():
        return None
    sums = _sums_moved(memory, kept, moved) if MOVING[0] in differ else kept.sums[2]  # the memory read the same
    counts, shapes = cast(Counts, parts[0]), cast("Mapping[str, Shape] | None", parts[1])
    if looks is not None:
        looks.with_engines(engines, kept.look)
        looks.follow(kept.look)
        looks.carry(kept.look, kept.part.needs, moved)
    made = nodes_of(counts, sums, engines, ages, set(), shapes, looks, kept.made, moved)
    nodes, old, freshest = _at_ages(kept.part, ages, stale, {n.name: n for n in made})
    needs = {} if looks is None else {label: sorted(names) for label, names in looks.needs.items() if names}
    part = NodePart(nodes, old, freshest, kept.part.warnings, needs)
    if looks is not None:
        looks.needs = {label: list(names) for label, names in needs.items()}
    kept.parts, kept.part, kept.look, kept.ages, kept.how = parts, part, looks.memo() if looks else None, ages, "moved"
    kept.sums = (memory, reserved, sums)
    return part


def _nodes_apart(now: object, then: object) -> set[str] | None:
    """The nodes of the series one answer has and the other has not (by object); None where one is not an
    answer or a series names no node."""
    if not isinstance(now, Result) or not isinstance(then, Result):
        return None
    had, has = set(map(id, then.series)), set(map(id, now.series))
    names = {node_of(s.labels) for s in now.series if id(s) not in had}
    names |= {node_of(s.labels) for s in then.series if id(s) not in has}
    return None if None in names else names  # type: ignore[return-value]


def _sums_moved(memory: Result, kept: NodesKept, moved: set[str]) -> Sums:
    """The kept sums with the `moved` nodes' read again from `memory` (their reserved memory, a slow fact's, kept)."""
    assert kept.sums is not None
    before = kept.sums[2]
    sums: Sums = defaultdict(dict, before)
    for name in moved:
        sums[name] = {f: v for f, v in before.get(name, {}).items() if f == "RESERVED"}
    for s in memory.series:
        if (node := node_of(s.labels)) is not None and node in moved:
            sums[node][_field_of(s.labels)] = s.value
    return sums


def _aged(results: Mapping[str, Result], stale: Stale, kept: NodesKept) -> NodePart | None:
    """The kept part with the ages read now, where nothing else a node is made of moved (the look read none of
    it either): each node its record copied with its new age (with the rules, every node at each evaluation
    where the scrapes are not in step with it). None where a node gained or lost its age: made anew."""
    assert kept.part is not None
    ages = per_node(results.get("nodes_age", EMPTY).series, min)
    if ages.keys() != kept.ages.keys():
        return None
    nodes, old, freshest = _at_ages(kept.part, ages, stale, {})
    kept.ages = ages
    return NodePart(nodes, old, freshest, kept.part.warnings, kept.part.needs)


def _at_ages(
    part: NodePart, ages: Mapping[str, float], stale: Stale, made: Mapping[str, FleetNode]
) -> tuple[list[FleetNode], dict[str, float | None], float | None]:
    """`part`'s nodes at `ages` (those `made` now in their place), the stale ones and the freshest age; a node seen
    in the hour with no age stays so (its nodes are the same)."""
    nodes = [
        made.get(n.name) or (n if same_age(n.data_age_s, age := ages.get(n.name)) else updated(n, {"data_age_s": age}))
        for n in part.nodes
    ]
    old: dict[str, float | None] = {n: a for n, a in ages.items() if stale(a)}
    old |= dict.fromkeys(n for n, a in part.stale.items() if a is None)
    fresh = [a for n, a in ages.items() if n not in old]
    return nodes, old, max(fresh) if fresh else None


def _node_sums(memory: Result, reserved: Result, kept: NodesKept | None) -> Sums:
    """`node_sums` of the two answers, the kept ones where they are the answers kept."""
    if kept is not None and kept.sums is not None and kept.sums[0] is memory and kept.sums[1] is reserved:
        return kept.sums[2]
    sums = node_sums([*memory.series, *reserved.series])
    if kept is not None:
        kept.sums = (memory, reserved, sums)
    return sums


def _same(now: tuple[object, ...], then: tuple[object, ...], but: int | None = None) -> bool:
    """Whether each of `now` is the object `then` has there (but at `but`, where given)."""
    if but is not None:
        now, then = (*now[:but], *now[but + 1 :]), (*then[:but], *then[but + 1 :])
    return len(now) == len(then) and all(map(operator.is_, now, then))


def _exporter_pods(names: set[str]) -> list[str]:
    """A warning for each node name that is dcgm-exporter's own pod's (its NODE_NAME unset)."""
    return [
        f"node name {name!r} looks like dcgm-exporter's own pod: NODE_NAME is unset in its environment"
        for name in names
        if EXPORTER_POD.search(name)
    ]


def cards_of(gpus: list[FleetGpu]) -> list[FleetGpu]:
    """Each card once, as the overview's node queries count it: a MIG card's GPU instances folded into it, each
    figure the largest of the card's and its instances' (the card's own where it reports one)."""
    by_card: dict[tuple, list[FleetGpu]] = defaultdict(list)
    for gpu in gpus:
        by_card[(gpu.node, gpu.uuid or gpu.index)].append(gpu)
    cards = []
    for same in by_card.values():
        if len(same) == 1:
            cards.append(same[0])
            continue
        update: dict[str, object] = {}
        unknown: dict[str, str] = {}
        for name, _ in FIELDS:
            values = [getattr(g, name) for g in same if getattr(g, name) is not None]
            update[name] = max(values, default=None)
            if not values:
                unknown[name] = next(g.unknown[name] for g in same if name in g.unknown)
        cards.append(same[0].model_copy(update={**update, "gpu_instance": None, "unknown": unknown}))
    return cards


def _field_of(labels: Mapping[str, str]) -> str:
    """`USED`, `FREE` or `RESERVED`: from the series' name, or its `field` label (a recorded node sum)."""
    return labels.get("field") or labels.get("__name__", "").removeprefix("DCGM_FI_DEV_FB_")


def node_counts(rows: list[Series]) -> Counts:
    """`node_gpus` per node, card and field."""
    counts: Counts = defaultdict(lambda: defaultdict(dict))
    for s in rows:
        node = node_of(s.labels)
        if node is not None and math.isfinite(s.value):
            counts[node][s.labels.get("modelName") or "?"][_field_of(s.labels)] = int(s.value)
    return counts


def node_sums(rows: list[Series]) -> Sums:
    """`node_memory` and `node_reserved` per node and field."""
    sums: Sums = defaultdict(dict)
    for s in rows:
        node = node_of(s.labels)
        if node is not None:
            sums[node][_field_of(s.labels)] = s.value
    return sums


def counts_of(gpus: list[FleetGpu]) -> Counts:
    """The cards counted per node, card and field, as `node_gpus` counts them."""
    counts: Counts = defaultdict(lambda: defaultdict(dict))
    for gpu in gpus:
        card = counts[gpu.node][gpu.card or "?"]
        for name, key in FIELDS:
            if getattr(gpu, name) is not None or not gpu.unknown.get(name, "").startswith(("n/a", "no DCGM")):
                card[key] = card.get(key, 0) + 1
    return counts


def sums_of(gpus: list[FleetGpu]) -> Sums:
    """The cards' memory summed per node and field in MiB, as `node_memory` sums it."""
    sums: Sums = defaultdict(dict)
    for gpu in gpus:
        mine = sums[gpu.node]
        for name, key in FIELDS:
            value = getattr(gpu, name)
            if not gpu.unknown.get(name, "").startswith(("n/a", "no DCGM")):
                mine[key] = mine.get(key, 0.0) + (math.nan if value is None else value / MIB)
    return sums
