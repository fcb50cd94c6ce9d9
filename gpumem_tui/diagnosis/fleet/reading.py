"""The judge's rules the fleet reader reads by (sources/prometheus/read_rules.ReadRules), handed to it by
whoever makes it (the command line, the demo): when a node's data is stale, and which nodes it reads GPU by
GPU. The reader never imports them: sources sit below diagnosis."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gpumem_tui.diagnosis.findings.records import Thresholds
from gpumem_tui.diagnosis.fleet.looks import Looks
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Result
from gpumem_tui.sources.prometheus.read_rules import HeldGpu, Totals


@dataclass(frozen=True)
class FleetRules:
    """The rules, with the judge's thresholds (GPUMEM_TUI_HEADROOM_* in the environment by default)."""

    thresholds: Thresholds = field(default_factory=Thresholds)

    def stale(self, age_s: float) -> bool:
        return stale(age_s)

    def looks(self, results: Mapping[str, Result], totals: Totals, identities: Iterable[HeldGpu], look: float) -> Looks:
        return Looks(results, totals, identities, look, self.thresholds)
