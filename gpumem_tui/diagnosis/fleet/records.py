"""The fleet's finding record: a Finding and the node it is about."""

from __future__ import annotations

from gpumem_tui.diagnosis.findings.records import Finding
from gpumem_tui.records import Record
from gpumem_tui.sources.prometheus.records import FleetEngine


class FleetFinding(Record):
    """A finding and the node it is about (None: the fleet or the source as a whole)."""

    node: str | None = None
    finding: Finding


def endpoint(engine: FleetEngine) -> str:
    """How a finding names an engine of the fleet: its pod, else its scrape target."""
    return f"{engine.namespace}/{engine.pod}" if engine.pod else engine.instance or "?"
