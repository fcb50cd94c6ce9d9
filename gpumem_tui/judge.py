"""What the app draws over a sample: plan overlays per GPU, and findings (severity, title)."""

from __future__ import annotations

from gpumem_tui.catalog import Catalog
from gpumem_tui.history import History
from gpumem_tui.models import Sample
from gpumem_tui.overlays import ManualPlan, manual_overlays
from gpumem_tui.planner.overlay import GpuOverlay

Findings = list[tuple[str, str]]


class Judge:
    """Holds the catalog and the manual plan (if any); the planner screen may replace the plan."""

    def __init__(self, catalog: Catalog, plan: ManualPlan | None = None):
        self.catalog, self.plan = catalog, plan

    def __call__(self, sample: Sample, history: History) -> tuple[dict[int, GpuOverlay], Findings]:
        findings: Findings = [
            ("critical" if e.source == "nvml" else "warning", f"{e.source}: {e.message}") for e in sample.errors
        ]
        findings += [("critical", f"GPU {g.index} lost: {g.error or 'no answer'}") for g in sample.gpus if g.lost]
        findings += [("warning", f"engine {e.url} is {e.state}: {e.error}") for e in sample.engines if e.state != "ok"]
        if self.plan is None:
            return {}, findings
        overlays, prediction = manual_overlays(self.plan, sample, self.catalog)
        if prediction is not None:
            findings += [("critical", f"plan: {line}") for line in prediction.failures]
            findings += [("warning", f"plan: {line}") for line in prediction.warnings]
        return overlays, findings
