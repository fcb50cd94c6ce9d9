"""Findings: what differs between the plan and the node, in plain words, with what to try."""

from gpumem_tui.diagnosis.findings.records import SEVERITY_ORDER, Finding, FindingCode, Severity, Thresholds, worst

__all__ = ["SEVERITY_ORDER", "Finding", "FindingCode", "Severity", "Thresholds", "worst"]
