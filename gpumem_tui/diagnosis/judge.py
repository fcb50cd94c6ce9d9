"""What the app judges with: the catalog, the manual plan and the thresholds (`forensics.Investigation` judges)."""

from __future__ import annotations

from gpumem_tui.catalog import Catalog
from gpumem_tui.diagnosis.findings.records import Thresholds
from gpumem_tui.diagnosis.overlays import ManualPlan


class Judge:
    """Holds the catalog, the manual plan (the planner screen may replace it) and the thresholds."""

    def __init__(self, catalog: Catalog, plan: ManualPlan | None = None, thresholds: Thresholds | None = None):
        self.catalog, self.plan, self.thresholds = catalog, plan, thresholds or Thresholds()
