"""The fleet's nodes: each node's figures summed on the server (used, free, reserved MiB per node) read
against the GPUs `node_gpus` counts on it, per card and field. What the counts alone say (the cards, the
GPUs, a field some GPUs do not report) is a node's Shape, made once per read of the counts where the caller
keeps them (the overview's reader), so a refresh reads only the sums."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from gpumem_tui.records import updated
from gpumem_tui.sources.prometheus import gpumem_export
from gpumem_tui.sources.prometheus.fleet_engines import Counts, said
from gpumem_tui.sources.prometheus.read_rules import NodeLook
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetNode
from gpumem_tui.units import MIB

LOOKBACK_NOTE = "no sample in the last 5 min (Prometheus's lookback)"
FIELDS = (("used_bytes", "USED"), ("free_bytes", "FREE"), ("reserved_bytes", "RESERVED"))
NO_RESERVED = (
    "n/a: this dcgm-exporter exports no DCGM_FI_DEV_FB_RESERVED (its default list has it from 4.4.0); "
    "total is used + free"
)
Sums = dict[str, dict[str, float]]
"""node -> field -> MiB summed over its GPUs."""


@dataclass(frozen=True, slots=True)
class Shape:
    """A node's GPUs as `node_gpus` counts them."""

    cards: dict[str, int]
    """GPU model -> count."""
    gpus: int
    missing: dict[str, str]
    """Field (`used_bytes` ...) -> why it is unknown, where the counts say so (no GPU, or GPUs not reporting)."""


def shape_of(cards: Mapping[str, Mapping[str, int]]) -> Shape:
    """From one node's counts: card model -> field (`USED` ...) -> GPUs that report it."""
    per_card = {card: max(fields.values(), default=0) for card, fields in cards.items()}
    gpus = sum(per_card.values())
    missing: dict[str, str] = {}
    for field, key in FIELDS:
        reporting = sum(fields.get(key, 0) for fields in cards.values())
        if not gpus:
            missing[field] = LOOKBACK_NOTE
        elif reporting == 0 and key == "RESERVED":
            missing[field] = NO_RESERVED
        elif reporting < gpus:
            missing[field] = f"{gpus - reporting} of {gpus} GPUs report no DCGM_FI_DEV_FB_{key}"
    return Shape(per_card, gpus, missing)


def shapes_of(counts: Counts) -> dict[str, Shape]:
    return {node: shape_of(cards) for node, cards in counts.items()}


def as_bytes(value: float | None, what: str, unknown: dict[str, str], field: str) -> int | None:
    """dcgm-exporter's MiB as bytes; None for no value, and for one that is no reading (with why)."""
    if value is None:
        return None
    if not math.isfinite(value) or value < 0:
        unknown[field] = f"dcgm-exporter reported {what} as {said(value)}: no reading"
        return None
    return round(value * MIB)


Figures = tuple[dict[str, int | None], dict[str, str], int | None]
"""A node's used, free and reserved bytes, why a field is unknown, and its total (None: unknown)."""


@dataclass(slots=True)
class Made:
    """A node's record as a refresh made it, and what it was made of: a later refresh whose series for the
    node read the same (the same kept Shape, equal sums, age, engines and `low`) keeps the record instead of
    making it again. With the recording rules a node's series change only at each rule evaluation."""

    shape: Shape
    sums: dict[str, float]
    figures: Figures
    age: float | None
    engines: list[str]
    node: FleetNode


NodeMemo = dict[str, Made]
"""node -> its record as the last refresh made it (the overview's reader keeps one between refreshes)."""


def nodes_of(
    counts: Counts,
    sums: Sums,
    engines: list[FleetEngine],
    ages: Mapping[str, float],
    seen: set[str],
    shapes: Mapping[str, Shape] | None = None,
    looks: NodeLook | None = None,
    memo: NodeMemo | None = None,
    only: set[str] | None = None,
) -> list[FleetNode]:
    """Every node counted, aged or seen, by name. `shapes`: `shapes_of(counts)`, where the caller keeps it;
    `looks`: the overview's look, which gives each node its `low` as its record is made; `memo`: the records
    the caller kept from its last refresh, each kept again where its node read the same (then replaced by
    this refresh's); `only`: these nodes' records alone, the others' kept by the caller."""
    served: dict[str, list[str]] = defaultdict(list)
    for engine in engines:
        if engine.node is not None:
            served[engine.node].append(engine.name)
    names = sorted(set(counts) | set(ages) | seen) if only is None else sorted(only)
    if memo is not None and only is None:  # a node no longer read is forgotten: the memo holds this refresh's
        for gone in memo.keys() - set(names):
            del memo[gone]
    last = {} if memo is None else memo
    nodes = []
    for name in names:
        shape = shapes.get(name) if shapes is not None else None
        if shape is None:
            shape = shape_of(counts.get(name, {}))
        mine, kept = sums.get(name, {}), last.get(name)
        same = kept is not None and kept.shape is shape and kept.sums == mine
        figures = kept.figures if same and kept is not None else _figures(shape, mine)
        made = _made(name, shape, mine, figures, ages.get(name), served.get(name, []), looks, kept if same else None)
        if memo is not None:
            memo[name] = made
        nodes.append(made.node)
    return nodes


def _figures(shape: Shape, mine: Mapping[str, float]) -> Figures:
    """A node's figures from its Shape and its sums (MiB by field)."""
    unknown: dict[str, str] = {"other_processes_bytes": gpumem_export.NO_EXPORTER}  # its exporter's, if any
    figures: dict[str, int | None] = {}
    for field, key in FIELDS:
        if field in shape.missing:
            unknown[field], figures[field] = shape.missing[field], None
        elif key not in mine:  # its GPUs report the field, but no sum of it was read (a query failed)
            unknown[field], figures[field] = f"no sum of DCGM_FI_DEV_FB_{key} was read for the node", None
        else:
            figures[field] = as_bytes(mine[key], f"FB_{key} on a GPU", unknown, field)
    if figures["used_bytes"] is None or figures["free_bytes"] is None:
        unknown["total_bytes"] = "used or free is unknown" if shape.gpus else LOOKBACK_NOTE
        total = None
    elif figures["reserved_bytes"] is None and not unknown["reserved_bytes"].startswith("n/a"):
        unknown["total_bytes"] = "reserved is unknown"
        total = None
    else:
        total = figures["used_bytes"] + figures["free_bytes"] + (figures["reserved_bytes"] or 0)
    return figures, unknown, total


def _made(
    name: str,
    shape: Shape,
    mine: dict[str, float],
    figures: Figures,
    age: float | None,
    served: list[str],
    looks: NodeLook | None,
    kept: Made | None,
) -> Made:
    """The node's record, `kept`'s where it was made of the same figures (`kept` None: they differ), age,
    engines and `low` (the look is asked each refresh: it also names the nodes to read one by one)."""
    values, unknown, total = figures
    low = None if looks is None else looks.low(name, shape.gpus, shape.cards, unknown, total)
    if kept is not None and kept.engines == served and kept.node.low == low:
        if same_age(kept.age, age):
            return kept
        # only its age moved (with the rules, every node at each evaluation): a copy, not a record checked anew
        return Made(shape, mine, figures, age, served, updated(kept.node, {"data_age_s": age}))
    node = FleetNode(
        name=name,
        gpus=shape.gpus,
        cards=shape.cards,
        data_age_s=age,
        engines=served,
        memory_from="dcgm-exporter" if shape.gpus else None,
        unknown=unknown,
        total_bytes=total,
        low=low,
        **values,
    )
    return Made(shape, mine, figures, age, served, node)


def same_age(before: float | None, now: float | None) -> bool:
    """Whether two ages read the same, as a record writes them (0.0 and -0.0 are equal numbers, not text)."""
    if before is None or now is None:
        return before is now
    return before == now and math.copysign(1.0, before) == math.copysign(1.0, now)
