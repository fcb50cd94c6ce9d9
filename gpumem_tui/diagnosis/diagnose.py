"""Plan vs actual: findings from the plans, the current sample and the recent history (pure). The app and
`check` call it through `forensics.Investigation`, which also explains an engine's exit."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.findings import SEVERITY_ORDER, Finding, Thresholds
from gpumem_tui.diagnosis.findings.registry import RULES
from gpumem_tui.diagnosis.findings.situation import Situation
from gpumem_tui.diagnosis.history import History
from gpumem_tui.models import Sample


def diagnose(plans: list[EnginePlan], sample: Sample, history: History, thresholds: Thresholds) -> list[Finding]:
    """Every finding, most severe first (stable order within a severity: the registry's order of rules)."""
    return findings_of(Situation(plans, sample, history, thresholds))


def findings_of(situation: Situation) -> list[Finding]:
    """`diagnose` of one situation; worded in each unit in turn, the situation computes its trends and
    what more capacity would buy once (`Situation`'s caches)."""
    found = [finding for rule in RULES for finding in rule(situation)]
    return sorted(found, key=lambda f: -SEVERITY_ORDER[f.severity])
