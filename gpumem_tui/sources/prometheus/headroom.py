"""When a node's low headroom is as its engines planned: the rule the fleet's judge counts by and the
overview reader decides by (which nodes it reads GPU by GPU), so both give one answer.

vLLM takes `gpu_memory_utilization` of each GPU on purpose: an H100 under vLLM's default 0.9 keeps about
8.7 % free, under the 10 % headroom warning fraction. A GPU under the fraction is "as planned" when the
engines holding it leave that much (within the tolerance) and it is not under the critical fraction. A whole
node is as planned when every one of its GPUs is held by a joined engine that states its utilization and the
GPU with the least free memory is as planned against the smallest of them: then so is every GPU under the
fraction."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gpumem_tui.sources.prometheus.records import FleetEngine, FleetNode, NodeLow


@dataclass(frozen=True)
class Headroom:
    """The fractions of a card the headroom findings use (diagnosis' Thresholds hold the settings)."""

    warning: float
    critical: float
    tolerance: float


def shares(engines: list[FleetEngine]) -> dict[str, float]:
    """GPU (its UUID, else index) -> the largest gpu_memory_utilization of the engines joined to it."""
    found: dict[str, float] = {}
    for engine in engines:
        share = engine.gpu_memory_utilization
        if share is not None and engine.joined != "not joined":
            if not found:  # the first engine (on a node, usually the only one): its GPUs at once
                found = dict.fromkeys(engine.gpus, max(0.0, share))
                continue
            for gpu in engine.gpus:
                found[gpu] = max(found.get(gpu, 0.0), share)
    return found


def as_planned_gpu(free: int, total: int, share: float | None, h: Headroom) -> bool:
    """A GPU under the warning fraction that its engines' utilization leaves so, and not critical."""
    if share is None or free < h.critical * total:
        return False
    return free >= total * (1 - share) - h.tolerance * total


def node_shares(engines: list[FleetEngine]) -> dict[str, dict[str, float]]:
    """`shares` per node: node -> GPU -> utilization."""
    by_node: dict[str, list[FleetEngine]] = defaultdict(list)
    for engine in engines:
        if engine.node is not None:
            by_node[engine.node].append(engine)
    return {node: shares(mine) for node, mine in by_node.items()}


def as_planned_node(node: FleetNode, mine: dict[str, float], h: Headroom) -> bool:
    """Every GPU of the node under the warning fraction is as planned (its `low` counts them); `mine`: the
    node's `node_shares`."""
    return node.low is not None and as_planned_low(node.low, node.gpus, mine, h)


def as_planned_low(low: NodeLow, gpus: int, mine: dict[str, float], h: Headroom) -> bool:
    """`as_planned_node` of a node of `gpus` GPUs whose GPUs under the fraction are `low`."""
    if not gpus or len(mine) < gpus:
        return False
    return as_planned_gpu(low.least_free_bytes, low.least_free_total_bytes, min(mine.values()), h)
