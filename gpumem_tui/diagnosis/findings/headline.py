"""The one-line verdict on a node: its status word, the finding that heads it and how many there are.

`check` prints it as its status line and the TUI keeps it on screen at every size, so both name the same
finding in the same words for the same moment."""

from __future__ import annotations

from collections.abc import Sequence

from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.findings.differ import compared
from gpumem_tui.diagnosis.findings.records import SEVERITY_ORDER, Finding, all_clear, worst
from gpumem_tui.text import literal

STATUS = ("OK", "WARNING", "CRITICAL", "UNKNOWN")
"""Status words by level (and by `check`'s exit code)."""


def level(findings: list[Finding]) -> int:
    """0 nothing above info, 1 a warning, 2 a critical finding."""
    return SEVERITY_ORDER[worst(findings) or "info"]


def headline(findings: list[Finding]) -> Finding | None:
    """The finding the status line names: of the worst severity, the first that names a process (it says
    whom to ask; low headroom on its card is what that process caused), else the first."""
    severity = worst(findings)
    top = [f for f in findings if f.severity == severity]
    return next((f for f in top if f.pid is not None), top[0] if top else None)


def ranked(findings: list[Finding]) -> list[Finding]:
    """The findings in the order `check` prints them: the headline first, then as diagnosed."""
    first = headline(findings)
    return [first, *(f for f in findings if f is not first)] if first else []


def clear(plans: list[EnginePlan], findings: Sequence[Finding] = ()) -> str:
    """What is said when nothing needs a look: agreement only for the plans that were compared (not for
    something else, not still loading: `differ.compared`)."""
    return all_clear(*compared(plans, list(findings)))


def summary(findings: list[Finding], plans: list[EnginePlan]) -> str:
    """How many findings of each severity that counts, and the headline's title (outside text literal)."""
    first = headline(findings)
    counted = [f for f in findings if f.severity != "info"]
    if first is None or not counted:
        return clear(plans, findings)  # info findings are notes, not a verdict: the panel lists them
    if len(counted) == 1:
        return literal(first.title)
    counts = ", ".join(
        count(sum(f.severity == severity for f in counted), severity)
        for severity in ("critical", "warning")
        if any(f.severity == severity for f in counted)
    )
    return f"{counts}: {literal(first.title)}"


def status(findings: list[Finding], plans: list[EnginePlan]) -> str:
    """`STATUS - summary`: `check`'s status line before its performance data."""
    return f"{STATUS[level(findings)]} - {summary(findings, plans)}"


def count(n: int, severity: str) -> str:
    """`2 critical`, `1 warning`, `3 warnings`."""
    return f"{n} {severity}{'s' if severity == 'warning' and n != 1 else ''}"
