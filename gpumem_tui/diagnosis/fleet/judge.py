"""Findings about a fleet read from Prometheus, as the app's own Finding records, each with its node: what
Prometheus lets us judge of each node, the fleet-only codes, and the findings a node's own `gpumem-tui
export` raised, which replace the fleet's about that node. A field Prometheus did not give raises nothing.
docs/design/fleet.md lists the codes and why."""

from __future__ import annotations

from gpumem_tui.diagnosis.findings.headline import STATUS, headline, level
from gpumem_tui.diagnosis.findings.headline import verdict as node_verdict
from gpumem_tui.diagnosis.findings.records import SEVERITY_ORDER, Finding, Thresholds
from gpumem_tui.diagnosis.findings.registry import BY_CODE, FINDINGS
from gpumem_tui.diagnosis.fleet.engines import config_drift, engine_down, kv_saturated, not_joined
from gpumem_tui.diagnosis.fleet.memory import headroom_low
from gpumem_tui.diagnosis.fleet.plan_findings import plan_findings
from gpumem_tui.diagnosis.fleet.records import FleetFinding
from gpumem_tui.diagnosis.fleet.stale import source_stale, stale
from gpumem_tui.sources.prometheus.held_back import SAID_FROM_S
from gpumem_tui.sources.prometheus.records import FleetSample
from gpumem_tui.text import literal

FLEET_ONLY = frozenset(kind.code for kind in FINDINGS if "node" not in kind.views)
"""Codes only the fleet judges (the registry's `views`); every other one a node's own `gpumem-tui export`
judges too."""


def nothing_read(sample: FleetSample) -> str | None:
    """Why the sample holds nothing to judge (no node and no engine within the hour: a --selector that matches
    nothing, a moment with no data), in words; None where it holds something. `fleet check` is then UNKNOWN and
    the screen says so: a source that answers is not a fleet that is ok."""
    if sample.nodes or sample.engines or sample.reading:  # a first look: the hour's nodes and the engines to come
        return None
    why = sample.unknown.get("memory", "no series")
    if sample.held_back_s >= SAID_FROM_S:  # the server's moment is not now: a node may have come since
        why = f"{why} as of {sample.held_back_s:.0f} s ago"
    return f"no node and no engine within the hour ({why})"


UNKNOWN = 3
"""`fleet check`'s exit code and STATUS index when nothing can be called OK."""


FIRST_LOOK_REST = "memory, engines and plans are judged when the rest is read"
"""What a first look's verdict adds: the findings it leaves to the whole picture (judge_fleet)."""


def verdict(sample: FleetSample, findings: list[FleetFinding]) -> tuple[int, str]:
    """`fleet check`'s level (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN: nothing read) and its words, `STATUS -
    headline; also counts`: the finding that heads the fleet, as the node's status line names it (the node's
    `verdict`), with its node, and how many others need a look. `fleet check` prints it first and the fleet
    screen under its header; a first look's (the screen's first frame) says it is one, and is never OK."""
    code, said = _verdict(sample, findings)
    if not sample.reading:
        return code, said
    # a first look: never OK (findings wait for the rest), and said to be one
    if code == 0:
        return UNKNOWN, f"first look - nothing needs a look so far; {FIRST_LOOK_REST}"
    return code, f"first look - {said}; {FIRST_LOOK_REST}"


def _verdict(sample: FleetSample, findings: list[FleetFinding]) -> tuple[int, str]:
    raised = [f.finding for f in findings]
    code = level(raised)
    if code == 0 and (empty := nothing_read(sample)):
        return UNKNOWN, f"{STATUS[UNKNOWN]} - {literal(empty)}"
    first = headline(raised)
    if first is None or first.severity == "info":  # info findings are notes, not a verdict
        return code, f"{STATUS[code]} - nothing needs a look"
    node = next(f.node for f in findings if f.finding is first)
    named = first.model_copy(update={"title": at_node(node, first.title)}) if node else first
    return code, str(node_verdict([named if f is first else f for f in raised], []))


def at_node(node: str | None, title: str) -> str:
    """`[node-e] its newest dcgm-exporter sample is 90 s old`: a finding's title after its node, which the
    title does not name again (`[node-e] node node-e: ...` said it twice); no node (None, or a series with an
    empty node label) is no prefix, never `[] `."""
    if not node:
        return title
    for said in (f"node {node}: ", f"node {node} "):
        if title.startswith(said):
            title = title[len(said) :]
            break
    return f"[{node}] {title}"


def judge_fleet(sample: FleetSample, thresholds: Thresholds | None = None) -> list[FleetFinding]:
    """Every finding of the sample, the most severe first, then by node. Of a first look (`sample.reading`)
    only those the whole picture raises too: a node stale by its age and the nodes' own exporters'; those about
    memory, engines and plans wait for the join and the engines, read next."""
    t = thresholds or Thresholds()
    found = source_stale(sample)
    if not sample.reading:  # a first look judges only what needs neither the join nor the engines: they wait
        found += [
            *engine_down(sample, t),
            *headroom_low(sample, t),
            *kv_saturated(sample, t),
            *not_joined(sample),
            *config_drift(sample),
            *(FleetFinding(node=node, finding=f) for node, f in plan_findings(sample, t)),
        ]
    from_nodes = _from_node_exporters(sample)
    # a node that judges itself knows better (its plan): its finding replaces the fleet's of the same code, and
    # while its exporter publishes, the node's findings are its whole answer to what the node's check judges
    said = {(f.node, f.finding.code, f.finding.gpu_index) for f in from_nodes}
    judging = {node for node, age in sample.exporter_nodes.items() if not stale(age)}
    if said or judging:
        found = [
            f
            for f in found
            if (f.node, f.finding.code, f.finding.gpu_index) not in said
            and (f.node not in judging or f.finding.code in FLEET_ONLY)
        ]
    found += from_nodes
    return sorted(found, key=lambda f: (-SEVERITY_ORDER[f.finding.severity], f.node or "", f.finding.code))


def _from_node_exporters(sample: FleetSample) -> list[FleetFinding]:
    """`gpumem_finding_active` of nodes that run `gpumem-tui export`, as findings in the node's own words
    (`gpumem_finding_info`: its title and what to try, as its `check` says them), or by the code's meaning where
    it publishes none; a code or severity this version does not know is left out (it would not be judged the
    same). A finding on a GPU two engines share is published once per engine: it is one finding here."""
    findings, seen = [], set()
    for f in sample.node_findings:
        kind = BY_CODE.get(f.code)
        key = (f.node, f.code, f.severity, f.gpu, f.pid, f.endpoint)
        if kind is None or f.severity not in kind.severities or key in seen:
            continue
        seen.add(key)
        gpu = f"GPU {literal(f.gpu)}: " if f.gpu else ""
        engine = f" ({literal(f.endpoint)})" if f.endpoint else ""
        findings.append(
            FleetFinding(
                node=f.node,
                finding=Finding(
                    severity=f.severity,  # checked against the registry above
                    code=kind.code,
                    title=literal(f.title) if f.title else f"node {literal(f.node)} {gpu}{kind.meaning}{engine}",
                    explanation="Raised by gpumem-tui export on the node, judged against the engine's plan"
                    + (f" (pid {literal(f.pid)}). " if f.pid else ". ")
                    + "The node's own check has the numbers.",
                    try_this=literal(f.try_this)
                    if f.try_this
                    else "run `gpumem-tui check -v` on the node, or open its TUI",
                    gpu_index=int(f.gpu) if f.gpu and f.gpu.isdigit() else None,
                    pid=int(f.pid) if f.pid and f.pid.isdigit() else None,
                    endpoint=f.endpoint,
                ),
            )
        )
    return findings
