"""When a node's data is stale, and `source_stale`: a node stopped reporting, a query failed, or the server
answered in part."""

from __future__ import annotations

from gpumem_tui.diagnosis.findings.records import Finding
from gpumem_tui.diagnosis.fleet.records import FleetFinding
from gpumem_tui.sources.prometheus.records import FleetSample
from gpumem_tui.text import literal

STALE_AFTER_S = 60.0
"""Twice dcgm-exporter's default 30 s collection interval: a node whose newest sample is older is stale."""


def stale(age_s: float) -> bool:
    """Whether a node's newest sample, `age_s` seconds old, says nothing of the node now (the reader is handed
    this: sources/prometheus/read_rules.Stale)."""
    return age_s > STALE_AFTER_S


def source_stale(sample: FleetSample) -> list[FleetFinding]:
    findings = []
    # a node only its gpumem-tui export reported, stopped past the lookback, has no figures: it was the exporter's
    ours = "gpumem-tui export"
    whose = {
        n.name: n.memory_from or (ours if n.name in sample.exporter_nodes else "dcgm-exporter") for n in sample.nodes
    }
    for node, age in sorted(sample.stale_nodes.items()):
        how_old = f"{age:.0f} s old" if age is not None else "older than 5 min (Prometheus's lookback)"
        exporter = whose.get(node, "dcgm-exporter")
        findings.append(
            FleetFinding(
                node=node,
                finding=Finding(
                    severity="warning",
                    code="source_stale",
                    title=f"node {literal(node)}: its newest {exporter} sample is {how_old}",
                    explanation=f"Data older than {STALE_AFTER_S:.0f} s (twice dcgm-exporter's 30 s collection "
                    "interval) says nothing of the node now: its memory is not judged.",
                    try_this=f"check that {exporter} runs on the node and that Prometheus scrapes it "
                    "(`up{job=...}` of its target)",
                ),
            )
        )
    if sample.error:
        findings.append(_whole_source("some queries failed, their fields are unknown", sample.error))
    for warning in sample.warnings:
        if "NODE_NAME" not in warning:
            findings.append(_whole_source("the server answered in part", warning))
    return findings


def _whole_source(title: str, words: str) -> FleetFinding:
    return FleetFinding(
        finding=Finding(
            severity="warning",
            code="source_stale",
            title=f"Prometheus: {title}",
            explanation=f"The server said: {literal(words)}.",
            try_this="look at the server's health (a Thanos store or Mimir querier that is down answers in part)",
        )
    )
