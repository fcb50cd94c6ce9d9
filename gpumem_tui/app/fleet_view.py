"""The fleet screen's rows, from one FleetSample and its findings (pure: tested without a terminal).

Per model: engines, GPUs, memory used vs planned, KV pool and usage, queue, preemptions, worst finding.
Per node, most severe first: its worst finding, GPU model x count, used/reserved/free, what processes that
are not engines hold (from the node's `gpumem-tui export`), engines. Findings grouped by code with counts.
A value Prometheus did not give is `unknown` (or `n/a` where the exporter has no such field), and its reason
goes into the table's notes as "FIELD: unknown, because ...": never a number that reads as fine. Text from
outside (node, pod, model names, labels) passes through `literal`."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from gpumem_tui.diagnosis.findings.records import SEVERITY_ORDER
from gpumem_tui.diagnosis.fleet.judge import at_node
from gpumem_tui.diagnosis.fleet.plans import model_memory
from gpumem_tui.diagnosis.fleet.records import FleetFinding
from gpumem_tui.sources.prometheus.records import QUIET_FIELDS, FleetEngine, FleetNode, FleetSample, ModelGauges
from gpumem_tui.text import literal
from gpumem_tui.units import Unit, fmt


@dataclass
class Table:
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)
    severities: list[str | None] = field(default_factory=list)
    """The worst severity of each row (for its colour), None for none."""
    keys: list[str] = field(default_factory=list)
    """What each row is about, where a key opens it (the node's name); empty: rows open nothing."""
    notes: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """(field, why it is unknown) -> the rows (engines, nodes) it is unknown for; an empty list: all of them."""

    def unknown(self, name: str, why: str, who: str | None = None) -> None:
        named = self.notes.setdefault((name, why), [])
        if who is not None:
            named.append(who)

    def said(self) -> list[str]:
        """Each note as a line, "field (the first row and how many more): unknown, because ..." (`n/a`
        reasons, a field the source does not have, as they are)."""
        lines = []
        for (name, why), who in self.notes.items():
            where = f" ({who[0]}{f' and {len(who) - 1} more' if len(who) > 1 else ''})" if who else ""
            lines.append(f"{name}{where}: {why}" if why.startswith("n/a") else f"{name}{where}: unknown, because {why}")
        return lines


def _worst(findings: list[FleetFinding]) -> FleetFinding | None:
    return max(findings, key=lambda f: SEVERITY_ORDER[f.finding.severity], default=None)


def _said(found: FleetFinding | None) -> str:
    return "none" if found is None else found.finding.code


def _memory_cell(value: int | None, why: str, unit: Unit) -> str:
    """A node's memory figure in `unit` (the screens' one, which `g` switches), or why it is missing ("n/a"
    where the exporter has no such field)."""
    if value is not None:
        return fmt(value, unit)
    return "n/a" if why.startswith("n/a") else "unknown"


def _sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v or 0 for v in values)


def _max(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else max((v or 0 for v in values), default=0)


def _model_findings(model: str, engines: list[FleetEngine], findings: list[FleetFinding]) -> list[FleetFinding]:
    """A model's findings: those about one of its engines (their endpoint), the fleet's config drift of the
    model, and those a node's own exporter raises on a node that serves only this model."""
    endpoints = {f"{e.namespace}/{e.pod}" if e.pod else e.instance for e in engines}
    nodes = {e.node for e in engines if e.node}
    prefix = f"{literal(model)} is served"
    return [
        f
        for f in findings
        if f.finding.endpoint in endpoints
        or (f.node is None and f.finding.title.startswith(prefix))
        or (f.node in nodes and f.finding.explanation.startswith("Raised by gpumem-tui export"))
    ]


def _gauges(
    gauges: ModelGauges | None, engines: list[FleetEngine], table: Table, model: str
) -> tuple[float | None, float | None]:
    """A model's largest KV usage and requests running: its engines', or as read per model (`gauges`), where the
    read took them by exception (unknown ones noted in `table`)."""
    if gauges is None:
        return _max([e.kv_usage_fraction for e in engines]), _sum([e.requests_running for e in engines])
    for name, why in gauges.unknown.items():
        table.unknown(name, literal(why), model)
    return gauges.kv_usage_max, gauges.requests_running


def model_table(sample: FleetSample, findings: list[FleetFinding], unit: Unit = "GB") -> Table:
    table = Table(
        (
            "Model",
            "Worst finding",
            "Eng",
            "GPUs",
            "Used",
            "Planned",
            "KV tokens",
            "KV max",
            "Run/wait",
            "Pre/min",
        )
    )
    if sample.reading:  # a first look: the engines, and the join that gives a model its GPUs, are read next
        table.unknown("models", "this is a first look: the engines and which pods hold which GPUs are read next")
        return table
    for memory in model_memory(sample):
        model, engines = memory.model_name, memory.engines
        for name, why in memory.unknown.items():
            if name == "used_bytes":
                table.unknown("used", literal(why), literal(model))
        pool = _sum([e.pool_tokens for e in engines])
        gauges = sample.models.get(model)  # read per model on the server: the engines under the fraction have none
        kv, running = _gauges(gauges, engines, table, literal(model))
        waiting = _sum([e.requests_waiting for e in engines])
        queue = "unknown" if running is None or waiting is None else f"{running:,.0f}/{waiting:,.0f}"
        preempt = _sum([e.preemptions_per_min for e in engines])
        for e in engines:
            for name, why in e.unknown.items():
                if gauges is None or name not in QUIET_FIELDS:  # the model's own figure says why, where it has none
                    table.unknown(name, literal(why), literal(e.name))
            if e.planned_bytes is None and "planned_bytes" not in e.unknown:
                table.unknown("planned_bytes", "no plan was made for it", literal(e.name))
        worst = _worst(_model_findings(model, engines, findings))
        table.rows.append(
            (
                literal(model),
                _said(worst),
                str(len(engines)),
                str(len(memory.gpus)),
                _memory_cell(memory.used_bytes, "", unit),
                _memory_cell(memory.planned_bytes, "", unit),
                "unknown" if pool is None else f"{pool:,.0f}",
                "unknown" if kv is None else f"{kv * 100:.0f} %",
                queue,
                "unknown" if preempt is None else f"{preempt:.1f}",
            )
        )
        table.severities.append(None if worst is None else worst.finding.severity)
    return table


def node_table(sample: FleetSample, findings: list[FleetFinding], unit: Unit = "GB") -> Table:
    """One row per node, the most severe first (critical, warning, info, none), then by name. A first look's
    (`sample.reading`) says a node without a finding yet is not judged yet, and its engines are being read."""
    # The memory before the cards' long names: on a narrow terminal what is cut off is on the right, and a node's
    # Used and Free tell more than its card names (70 columns cut them off after the GPUs).
    table = Table(("Node", "Worst finding", "Used", "Free", "Reserved", "Others", "GPUs", "Engines"))
    by_node: dict[str, list[FleetFinding]] = defaultdict(list)
    for f in findings:
        if f.node is not None:
            by_node[f.node].append(f)

    def rank(node: FleetNode) -> tuple[int, str]:
        worst = _worst(by_node.get(node.name, []))
        return (-(SEVERITY_ORDER[worst.finding.severity] + 1) if worst else 0, node.name)

    for node in sorted(sample.nodes, key=rank):
        cards = ", ".join(f"{n} x {literal(card)}" for card, n in node.cards.items()) or "no GPU series"
        for name, why in node.unknown.items():
            name = "others" if name == "other_processes_bytes" else name.removesuffix("_bytes")
            table.unknown(name, literal(why), literal(node.name))
        stale = node.name in sample.stale_nodes
        own = by_node.get(node.name, [])
        worst = _worst(own)
        said: str = ("not judged yet" if sample.reading else "none") if worst is None else worst.finding.code
        said += f" +{len(own) - 1} more" if len(own) > 1 else ""
        table.rows.append(
            (
                literal(node.name) + (" (stale)" if stale else ""),
                said,
                *(
                    _memory_cell(getattr(node, f), node.unknown.get(f, ""), unit)
                    for f in ("used_bytes", "free_bytes", "reserved_bytes", "other_processes_bytes")
                ),
                cards,
                "reading" if sample.reading else str(len(node.engines)),  # a first look: the join is read next
            )
        )
        table.severities.append(None if worst is None else worst.finding.severity)
        table.keys.append(node.name)
    return table


def finding_table(findings: list[FleetFinding]) -> Table:
    """One row per code, the most severe first: how many, on how many nodes, one example."""
    table = Table(("Severity", "Code", "Count", "Nodes", "Example"))
    by_code: dict[tuple[str, str], list[FleetFinding]] = defaultdict(list)
    for f in findings:
        by_code[(f.finding.severity, f.finding.code)].append(f)
    for (severity, code), same in sorted(by_code.items(), key=lambda kv: (-SEVERITY_ORDER[kv[0][0]], kv[0][1])):
        nodes = len({f.node for f in same if f.node is not None})
        first = same[0]
        table.rows.append(
            (severity, code, str(len(same)), str(nodes), literal(at_node(first.node, first.finding.title)))
        )
        table.severities.append(severity)
    return table
