"""What the fleet says of the server it reads: the data a server holds back (VictoriaMetrics'
-search.latencyOffset) beside the data age, and when the screen says to load the recording rules."""

from __future__ import annotations

from gpumem_tui.diagnosis.fleet.held_back import data_age
from gpumem_tui.diagnosis.fleet.scale import RULES_FROM_NODES, rules_advice
from gpumem_tui.sources.prometheus.records import Coverage, FleetSample


def test_the_age_adds_what_the_server_holds_back_and_says_why():
    assert data_age(4.2, 0.0) == "4 s"
    assert data_age(None, 0.0) == "unknown"
    assert data_age(0.4, 30.0) == (
        "30 s, 30 s of it held back: the server answers as of 30 s ago (VictoriaMetrics' -search.latencyOffset)"
    )
    assert data_age(None, 30.0).endswith("so a node that began reporting since is not shown yet")


def _sample(nodes: int, figures: str) -> FleetSample:
    return FleetSample(
        source="http://prometheus:9090", evaluated_at=0.0, coverage=Coverage(nodes=nodes), node_figures_from=figures
    )


def test_the_rules_are_advised_past_the_threshold_over_the_raw_series_only():
    advice = rules_advice(_sample(RULES_FROM_NODES, "raw series"))
    assert advice is not None and "gpumem-tui fleet rules" in advice and f"{RULES_FROM_NODES:,} nodes" in advice
    assert rules_advice(_sample(RULES_FROM_NODES - 1, "raw series")) is None
    assert rules_advice(_sample(RULES_FROM_NODES, "recording rules")) is None
