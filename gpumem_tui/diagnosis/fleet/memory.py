"""`headroom_low` of a fleet: per GPU read one by one (worded by the node's rule, as_node.py), and per node where
its GPUs under the fraction are as its engines planned (counted by the overview, `FleetNode.low`)."""

from __future__ import annotations

from collections import defaultdict
from operator import is_

from gpumem_tui.diagnosis.findings.memory import AS_PLANNED_ADVICE, headroom_severity
from gpumem_tui.diagnosis.findings.memory import headroom_low as node_headroom_low
from gpumem_tui.diagnosis.findings.records import Finding, Thresholds
from gpumem_tui.diagnosis.findings.situation import percent
from gpumem_tui.diagnosis.fleet.as_node import gpu_sample, judged, utilization_plan
from gpumem_tui.diagnosis.fleet.headroom import as_planned_node, engine_shares, planned_free
from gpumem_tui.diagnosis.fleet.records import FleetFinding
from gpumem_tui.sources.prometheus.records import FleetNode, FleetSample, NodeLow
from gpumem_tui.text import literal
from gpumem_tui.units import gib


def headroom_low(sample: FleetSample, t: Thresholds) -> list[FleetFinding]:
    """Per GPU read one by one: a warning or critical finding each; GPUs under the fraction as their
    engines planned are counted per node (one info finding), as are those the overview counted on the
    server (`FleetNode.low`): both reads say the same of a node."""
    share, per_node = engine_shares(sample.engines)
    planned: dict[str, list[tuple[int, int]]] = defaultdict(list)
    findings = []
    t = _forget_gone(len(sample.nodes), t)  # the one object of these thresholds, which the memos' answers name
    for gpu in sample.gpus:
        free, total = gpu.free_bytes, gpu.total_bytes
        if gpu.node in sample.stale_nodes or free is None or not total:
            continue
        given = share.get(gpu.uuid or gpu.index or "?")
        severity = headroom_severity(free, total, planned_free(total, given), t)
        if severity is None:
            continue
        if severity == "info":  # as planned: counted per node
            planned[gpu.node].append((free, total))
            continue
        plans = utilization_plan(gpu, planned_free(total, given) or 0) if given is not None else []
        said = judged(node_headroom_low, gpu_sample(gpu, sample), t, plans)
        findings += [FleetFinding(node=gpu.node, finding=f) for f in said]
    return findings + _per_node(sample, per_node, planned, t)


def _per_node(
    sample: FleetSample, per_node: dict[str, dict[str, float]], planned: dict[str, list[tuple[int, int]]], t: Thresholds
) -> list[FleetFinding]:
    """Each node's as-planned finding; the last sample's list where its nodes are the very same records, their
    shares the same dicts and no GPU was read one by one (between two evaluations of the rules: node_part.py)."""
    last = next(iter(NODES_SAID), None)
    if (
        not planned
        and last is not None
        and last[1] is per_node
        and last[4] is t
        and last[2] == sample.stale_nodes
        and len(last[0]) == len(sample.nodes)
        and all(map(is_, last[0], sample.nodes))
    ):
        return last[3]
    findings = []
    for node in sample.nodes:
        if node.name in sample.stale_nodes:
            continue
        mine = per_node.get(node.name, NONE)
        if planned.get(node.name):
            findings.append(_as_planned(node.name, planned[node.name], mine, t))
        elif (counted := _by_low(node, mine, t)) is not None:
            findings.append(counted)
    if not planned:
        NODES_SAID[:] = [(sample.nodes, per_node, dict(sample.stale_nodes), findings, t)]
    return findings


NONE: dict[str, float] = {}
"""The shares of a node no engine states one for (one dict, so that it reads as the same each time)."""
BY_LOW: dict[str, tuple[NodeLow, int, dict[str, float], Thresholds, FleetFinding | None]] = {}
"""Each node's last answer from its `low`, with what it came from: between two evaluations of the rules a node's
`low` and its engines' shares are the very objects of the last sample (node_part.py, headroom.engine_shares),
and its thresholds the object THRESHOLDS held."""
NODES_SAID: list[
    tuple[list[FleetNode], dict[str, dict[str, float]], dict[str, float | None], list[FleetFinding], Thresholds]
]
NODES_SAID = []
"""The last sample's nodes, their shares and stale nodes, what was said of them and the thresholds it was judged
by (one, replaced whole)."""
THRESHOLDS: list[Thresholds | None] = [None]
"""The thresholds of the last judge, the one object the memos' answers name: an equal one given later is judged as
this one, another replaces it. Two threads that judge by other thresholds at once each find the other's answers
made of another object, never theirs (a memo cleared when the thresholds changed was filled by the other thread
between the check and the look-up)."""


def _forget_gone(nodes: int, t: Thresholds) -> Thresholds:
    """The memos let go where they hold many more nodes than the fleet has (nodes that left it); THRESHOLDS's
    object where `t` reads as it does, else `t`, held from now on."""
    was = THRESHOLDS[0]
    if was is None or was != t:
        THRESHOLDS[0] = was = t
    for memo in (BY_LOW, SAID):
        if len(memo) > 2 * nodes + 1000:
            memo.clear()
    return was


def forget() -> None:
    """The nodes' kept answers and words let go (a judge from nothing)."""
    BY_LOW.clear()
    SAID.clear()
    NODES_SAID.clear()
    THRESHOLDS[0] = None


def _by_low(node: FleetNode, mine: dict[str, float], t: Thresholds) -> FleetFinding | None:
    """The node's as-planned finding from the overview's count (`FleetNode.low`), where it has one."""
    low = node.low
    if low is None:
        return None
    kept = BY_LOW.get(node.name)
    if kept is not None and kept[0] is low and kept[1] == node.gpus and kept[2] is mine and kept[3] is t:
        return kept[4]
    said = None
    if low.gpus and as_planned_node(node, mine, t):
        said = _as_planned(node.name, [(low.least_free_bytes, low.least_free_total_bytes)] * low.gpus, mine, t)
    BY_LOW[node.name] = (low, node.gpus, mine, t, said)
    return said


SAID: dict[str, tuple[tuple[object, ...], FleetFinding]] = {}
"""Each node's last as-planned finding, with what it was worded from: the fleet screen judges 10^4 nodes every
15 s, and a node whose GPUs read the same is told in the same words (the finding a frozen record, shared)."""


def _as_planned(node: str, gpus: list[tuple[int, int]], mine: dict[str, float], t: Thresholds) -> FleetFinding:
    """One info finding for a node's GPUs under the fraction as planned: how many, and the least free;
    `mine`: the utilization its engines give each of its GPUs."""
    free, total = min(gpus, key=lambda g: g[0] / g[1])
    shares_said = sorted(set(mine.values()))
    read = (len(gpus), free, total, tuple(shares_said), t.headroom_warning_fraction)
    said = SAID.get(node)
    if said is not None and said[0] == read:
        return said[1]
    finding = _worded(node, len(gpus), free, total, shares_said, t)
    SAID[node] = (read, finding)
    return finding


def _worded(node: str, gpus: int, free: int, total: int, shares_said: list[float], t: Thresholds) -> FleetFinding:
    count = f"{gpus} GPU{'s' * (gpus > 1)}"
    return FleetFinding(
        node=node,
        finding=Finding(
            severity="info",
            code="headroom_low",
            title=f"node {literal(node)}: {count} under {percent(t.headroom_warning_fraction)} free, as planned "
            f"(the least: {percent(free / total)})",
            explanation=f"The least free has {gib(free)} of {gib(total)} ({percent(free / total)} of the card); "
            f"its engines' gpu_memory_utilization ({', '.join(f'{s:g}' for s in shares_said)}) leaves that much "
            "on purpose.",
            try_this=AS_PLANNED_ADVICE,
        ),
    )
