"""One node read from Prometheus, judged as `check` judges a node (`diagnose` on its Sample, unchanged), with
what only the fleet's reading of the node says (FROM_FLEET codes) and the findings its own `gpumem-tui export`
raised; `differences` says where the node's findings and `fleet check`'s for it still differ, and why.
docs/design/fleet.md has the whole account."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gpumem_tui.diagnosis.findings import SEVERITY_ORDER, Finding, Thresholds
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.records import FleetFinding
from gpumem_tui.sources.prometheus.node_feed import NodeFeed
from gpumem_tui.sources.prometheus.records import FleetSample

FROM_FLEET = ("source_stale", "not_joined")
"""Codes only the fleet's reading raises; the node's check takes them from it."""
NO_PLAN = (
    "the fleet plans each engine from its cache settings, the catalog and the GPUs it joins (weights and context "
    "assumed: vLLM's metrics say neither), while the node's check plans it as check plans a running engine; "
    "where they assume differently, their plan findings differ"
)
WHY_NOT = {
    "plan_note": NO_PLAN,
    "context_too_long": NO_PLAN,
    "plan_mismatch": NO_PLAN,
    "plan_renamed": NO_PLAN,
    "weights_mismatch": NO_PLAN,
    "kv_pool_short": NO_PLAN,
    "foreign_process": "the fleet reads no processes: a node's foreign process reaches it only as a finding of "
    "the node's gpumem-tui export, while the node's check reads the export's per-process series",
    "engine_value_implausible": "the fleet shows a value that cannot be true as unknown, with its reason, and "
    "raises nothing for it",
    "engine_starting": "the fleet reads no engine's start: a target that is down is engine_down there",
    "config_drift": "one model served two ways is a finding about the fleet, not one node",
}
"""Why a code may be raised on one side only, or at another severity."""


def judge_node(found: list[Finding], fleet: FleetSample, thresholds: Thresholds | None = None) -> list[Finding]:
    """`found` (diagnose's findings of the node's Sample) with the fleet's own findings about the node
    (`fleet`: the node's read, FROM_FLEET codes) and its exporter's, most severe first."""
    t = thresholds or Thresholds()
    exporter = [f.finding for f in judge_fleet(exporters_only(fleet), t)]
    said = {(f.code, f.gpu_index) for f in exporter}
    kept = [f for f in found if (f.code, f.gpu_index) not in said]
    from_fleet = [f.finding for f in judge_fleet(fleet, t) if f.finding.code in FROM_FLEET]
    return sorted([*kept, *exporter, *from_fleet], key=lambda f: -SEVERITY_ORDER[f.severity])


def with_fleet(feed: NodeFeed, thresholds: Thresholds | None = None) -> Callable[[list[Finding]], list[Finding]]:
    """What the single-node screen adds to each sample's findings on a node read from Prometheus: `judge_node`
    with the feed's latest read of the node (the screen then says what `check --prometheus --node` says)."""

    def also(found: list[Finding]) -> list[Finding]:
        return found if feed.last is None else judge_node(found, feed.last.fleet, thresholds)

    return also


def exporters_only(fleet: FleetSample) -> FleetSample:
    """The sample with nothing but the findings of the nodes' `gpumem-tui export`: judged, it gives those."""
    return FleetSample(source=fleet.source, evaluated_at=fleet.evaluated_at, node_findings=fleet.node_findings)


@dataclass(frozen=True)
class Difference:
    code: str
    severity: str
    only_in: Literal["node", "fleet"]
    """`node`: the node's check raises it and `fleet check` does not, for this node; `fleet`: the reverse."""
    why: str | None
    """Why, when the difference is one the two judges are known to have; None: unexplained (a bug)."""


def differences(node: list[Finding], fleet: list[FleetFinding], name: str) -> list[Difference]:
    """Codes and severities the node's check and the fleet's findings about node `name` do not share."""
    mine = {(f.code, f.severity) for f in node}
    theirs = {(f.finding.code, f.finding.severity) for f in fleet if f.node == name}
    found = [Difference(c, s, "node", WHY_NOT.get(c)) for c, s in sorted(mine - theirs)]
    return found + [Difference(c, s, "fleet", WHY_NOT.get(c)) for c, s in sorted(theirs - mine)]
