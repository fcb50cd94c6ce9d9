"""When the fleet screen says to load the recording rules: past RULES_FROM_NODES nodes read from the raw series,
each refresh has the server aggregate every GPU's series (docs/fleet.md, "Past 1,000 nodes"), which the rules
of `gpumem-tui fleet rules` do once per rule interval instead."""

from __future__ import annotations

from gpumem_tui.sources.prometheus.records import FleetSample

RULES_FROM_NODES = 1000
"""Where the raw aggregation is most of a refresh's time (bench/fleet.py: at 1,000 nodes, about half)."""


def rules_advice(sample: FleetSample) -> str | None:
    """The words that say to load the rules, where this sample calls for them."""
    if sample.node_figures_from != "raw series" or sample.coverage.nodes < RULES_FROM_NODES:
        return None
    return (
        f"{sample.coverage.nodes:,} nodes aggregated from every GPU's series at each refresh: load the recording "
        "rules `gpumem-tui fleet rules` prints into the server to make each refresh cheaper (docs/fleet.md)"
    )
