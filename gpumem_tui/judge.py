"""What the app draws over a sample: plan overlays per GPU and findings, from the diagnosis."""

from __future__ import annotations

from gpumem_tui.catalog import Catalog
from gpumem_tui.diagnose import judge
from gpumem_tui.findings.records import Finding, Thresholds
from gpumem_tui.history import History
from gpumem_tui.models import Sample
from gpumem_tui.overlays import ManualPlan
from gpumem_tui.planner.overlay import GpuOverlay


class Judge:
    """Holds the catalog, the manual plan (the planner screen may replace it) and the thresholds."""

    def __init__(self, catalog: Catalog, plan: ManualPlan | None = None, thresholds: Thresholds | None = None):
        self.catalog, self.plan, self.thresholds = catalog, plan, thresholds or Thresholds()

    def __call__(self, sample: Sample, history: History) -> tuple[dict[int, GpuOverlay], list[Finding]]:
        return judge(sample, history, self.catalog, self.plan, self.thresholds)
