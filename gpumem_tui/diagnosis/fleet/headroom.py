"""When a GPU's or a node's low headroom is as its engines planned: the rule the judge counts by and the
overview's look decides by (looks.py), so both give one answer. vLLM takes `gpu_memory_utilization` of each
GPU on purpose, so a GPU under the warning fraction that its engines leave so is "as planned" (info);
docs/design/fleet.md has the whole-node case."""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from gpumem_tui.diagnosis.findings.memory import as_planned
from gpumem_tui.diagnosis.findings.records import Thresholds
from gpumem_tui.diagnosis.fleet.kept import kept
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetNode, NodeLow


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


def planned_free(total: int, share: float | None) -> float | None:
    """The free memory an engine's gpu_memory_utilization `share` leaves of a card of `total` bytes."""
    return None if share is None else total * (1 - share)


def as_planned_gpu(free: int, total: int, share: float | None, t: Thresholds) -> bool:
    """A GPU under the warning fraction that its engines' utilization leaves so, and not critical: the node's
    own rule (findings/memory.as_planned) with what the utilization leaves as the plan's free memory."""
    return as_planned(free, total, planned_free(total, share), t)


def node_shares(engines: list[FleetEngine]) -> dict[str, dict[str, float]]:
    """`shares` per node: node -> GPU -> utilization. The dicts are shared: read them, never change them."""
    return engine_shares(engines).per_node


class Shares(NamedTuple):
    """The engines' shares, whole (`shares`) and per node."""

    whole: dict[str, float]
    per_node: dict[str, dict[str, float]]


@kept
def engine_shares(engines: list[FleetEngine]) -> Shares:
    """`shares` of all the engines and per node: the fleet's reader and its judge ask it of each sample, and an
    engine's gauges, which move with every scrape, do not count (kept.py), so a node's dict is the very one of
    the last sample while its engines' facts stay."""
    by_node: dict[str, list[FleetEngine]] = defaultdict(list)
    for engine in engines:
        if engine.node is not None:
            by_node[engine.node].append(engine)
    return Shares(shares(engines), {node: shares(mine) for node, mine in by_node.items()})


def as_planned_node(node: FleetNode, mine: dict[str, float], t: Thresholds) -> bool:
    """Every GPU of the node under the warning fraction is as planned (its `low` counts them); `mine`: the
    node's `node_shares`."""
    least = min(mine.values(), default=0.0)
    return node.low is not None and as_planned_low(node.low, node.gpus, len(mine), least, t)


def as_planned_low(low: NodeLow, gpus: int, count: int, least: float, t: Thresholds) -> bool:
    """A node of `gpus` GPUs whose GPUs under the fraction are `low` is as planned: a joined engine states its
    utilization for each of its GPUs (`count` of them, the smallest `least`), and the least free GPU is as
    planned against the smallest: then so is every GPU under the fraction."""
    if not gpus or count < gpus:
        return False
    return as_planned_gpu(low.least_free_bytes, low.least_free_total_bytes, least, t)
