"""`fleet snapshot` and `fleet check` as text: plain lines, outside text shown literally, written at once."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from gpumem_tui.cli.check_status import plugin_text
from gpumem_tui.diagnosis.findings.situation import said_of_any_engine
from gpumem_tui.diagnosis.fleet.held_back import data_age
from gpumem_tui.diagnosis.fleet.judge import at_node
from gpumem_tui.diagnosis.fleet.records import FleetFinding
from gpumem_tui.glyphs import for_terminal
from gpumem_tui.sources.prometheus.records import FleetSample
from gpumem_tui.text import literal
from gpumem_tui.units import fmt_both

if TYPE_CHECKING:  # a history is printed by `snapshot --history` only
    from gpumem_tui.sources.prometheus.history import FleetHistory

PLAN_FROM = {"catalog": "the catalog", "exporter": "its node's gpumem-tui export"}
INFO_LISTED = 5
"""Info findings of one code listed one by one up to this many; beyond, counted with one example."""


def coverage_line(sample: FleetSample) -> str:
    c = sample.coverage
    line = f"{c.nodes:,} nodes, {c.gpus:,} GPUs, {c.engines:,} engines, {c.joined:,} joined"
    if c.not_joined:
        line += f" ({c.not_joined:,} not joined)"
    return f"{line}; data age {data_age(sample.data_age_s, sample.held_back_s)}"


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def _bytes(value: int | None, unknown: dict[str, str], field: str) -> str:
    if value is not None:
        return fmt_both(value)
    return "n/a" if unknown.get(field, "").startswith("n/a") else "unknown"


def _write(lines: list[str]) -> None:
    """Plain lines, outside text shown literally, written at once: a reader that leaves (`| head -1`)
    raises BrokenPipeError here, which keeps the exit status (rich's console would exit 1 instead)."""
    sys.stdout.write("".join(literal(line) + "\n" for line in lines))


def print_snapshot(sample: FleetSample, history: FleetHistory | None) -> None:
    lines = [f"{sample.source} at {_when(sample.evaluated_at)}: {coverage_line(sample)}"]
    lines += [f"  {what} unknown: {why}" for what, why in sample.unknown.items()]
    lines += ["", "Nodes:"]
    for node in sample.nodes:
        cards = ", ".join(f"{n} x {card}" for card, n in node.cards.items()) or "no GPU series"
        stale = " (stale)" if node.name in sample.stale_nodes else ""
        others = _bytes(node.other_processes_bytes, node.unknown, "other_processes_bytes")
        lines.append(
            f"  {node.name}{stale}: {cards}; used {_bytes(node.used_bytes, node.unknown, 'used_bytes')}, "
            f"reserved {_bytes(node.reserved_bytes, node.unknown, 'reserved_bytes')}, "
            f"free {_bytes(node.free_bytes, node.unknown, 'free_bytes')}"
            + (f" (from {node.memory_from})" if node.memory_from not in (None, "dcgm-exporter") else "")
            + (
                f" (dcgm-exporter's; its gpumem-tui export reads used {fmt_both(node.exporter_used_bytes)})"
                if node.exporter_used_bytes is not None
                else ""
            )
            + (f", other processes {others}" if node.other_processes_bytes is not None else "")
            + f"; engines: {', '.join(node.engines) or '-'}"
        )
    lines += ["", "Engines:"]
    for e in sample.engines:
        kv = "unknown" if e.kv_usage_fraction is None else f"{e.kv_usage_fraction * 100:.1f} %"
        pool = "unknown" if e.pool_tokens is None else f"{e.pool_tokens:,} tokens"
        if e.planned_bytes is not None:
            planned = f"planned {fmt_both(e.planned_bytes)} (from {PLAN_FROM.get(e.plan_from or '', e.plan_from)})"
        else:
            planned = f"planned unknown: {e.unknown.get('planned_bytes', 'no plan was made')}"
        lines.append(f"  {e.name} on {e.node or '?'}: KV {kv} of {pool}; {planned}; {e.joined}: {e.join_reason}")
    _write(lines)
    if history is not None:
        from gpumem_tui.app.fleet_history_view import history_lines

        _write(["", *history_lines(history, for_terminal(False, sys.stdout))])


def print_check(sample: FleetSample, findings: list[FleetFinding], said: str) -> None:
    """`said` (the verdict: diagnosis/fleet/judge.verdict) and the coverage, then one line per finding, findings
    alike (one code, node, explanation and advice: the same plan on four engines) on one line."""
    lines = [plugin_text(f"{said}; {coverage_line(sample)}")]
    infos: dict[str, list[list[FleetFinding]]] = {}
    for group in _alike(findings):
        first = group[0].finding
        if first.severity == "info":
            infos.setdefault(first.code, []).append(group)
            continue
        # no `|` in any line: a monitoring system reads the first one as the start of performance data
        lines.append(plugin_text(f"{first.severity:8} {first.code}: {_said(group)}"))
    for kind, groups in infos.items():
        lines += _infos(kind, groups)
    if not findings:
        lines.append(f"Evaluated at {_when(sample.evaluated_at)} on {sample.source}.")
    _write(lines)


def _alike(findings: list[FleetFinding]) -> list[list[FleetFinding]]:
    """The findings in groups that say one thing (code, severity, node, explanation but for the engine it names,
    advice), in order."""
    groups: dict[tuple, list[FleetFinding]] = {}
    for f in findings:
        said = said_of_any_engine(f.finding.explanation)
        key = (f.finding.severity, f.finding.code, f.node, said, f.finding.try_this)
        groups.setdefault(key, []).append(f)
    return list(groups.values())


def _said(group: list[FleetFinding]) -> str:
    """`[node] title`; of a group, the first's title and which other engines or GPUs it is also about (or, of
    findings alike, how many and their titles)."""
    first = group[0]
    said = [f.finding for f in group]
    if len(group) == 1:
        return at_node(first.node, first.finding.title)
    if all(f.endpoint for f in said):
        return at_node(first.node, f"{first.finding.title}; also {', '.join(f.endpoint or '' for f in said[1:])}")
    if all(f.gpu_index is not None for f in said):
        return at_node(first.node, f"{first.finding.title}; also {', '.join(f'GPU {f.gpu_index}' for f in said[1:])}")
    alike = ", ".join(f.title for f in said[1:])
    return at_node(first.node, f"{len(group)} alike: {first.finding.title}; also {alike}")


def _infos(kind: str, groups: list[list[FleetFinding]]) -> list[str]:
    """The info findings of one code: each group on its line, or past INFO_LISTED counted with one example."""
    if len(groups) > INFO_LISTED:  # a fleet has thousands of GPUs as planned: counted, one example
        same = [f for group in groups for f in group]
        nodes = len({f.node for f in same})
        first = same[0]
        return [
            plugin_text(
                f"info     {kind}: {len(same):,} on {nodes:,} node{'s' * (nodes != 1)}, "
                f"such as {at_node(first.node, first.finding.title)} (--json lists each)"
            )
        ]
    return [plugin_text(f"info     {kind}: {_said(group)}") for group in groups]
