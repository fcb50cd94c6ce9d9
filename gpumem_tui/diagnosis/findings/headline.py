"""The one-line verdict on a node: its status word, the finding that heads it and how many more there are.

`check` prints it as its status line and the TUI keeps it on screen under its header at every size, from this
one function (`verdict`), so both name the same finding in the same words for the same moment."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

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


class Verdict(NamedTuple):
    """The node's verdict in one line, as `check` prints it first and the TUI under its header: the status
    word, the headline's title (what broke and where, then who: `words.compose`) or what is said when nothing
    needs a look, and how many other findings need a look."""

    status: str
    """`OK`, `WARNING`, `CRITICAL`; empty before there is anything to judge."""
    title: str
    also: str = ""
    """`also 1 critical, 2 warnings`: the other findings above info, after the headline."""
    level: int = 0

    def __str__(self) -> str:
        head = f"{self.status} - {self.title}" if self.status else self.title
        return f"{head}; {self.also}" if self.also else head


WAITING = Verdict("", "Waiting for the first sample…")
"""What is said before the first sample: no verdict without data."""


def verdict(findings: list[Finding], plans: list[EnginePlan]) -> Verdict:
    """The headline first (outside text literal), then how many others need a look; what is said when nothing
    does (info findings are notes, not a verdict: the panel lists them)."""
    first, worst_level = headline(findings), level(findings)
    others = [f for f in findings if f.severity != "info" and f is not first]
    if first is None or first.severity == "info":
        return Verdict(STATUS[worst_level], clear(plans, findings), level=worst_level)
    counts = ", ".join(
        count(sum(f.severity == severity for f in others), severity)
        for severity in ("critical", "warning")
        if any(f.severity == severity for f in others)
    )
    return Verdict(STATUS[worst_level], literal(first.title), f"also {counts}" if counts else "", worst_level)


def status(findings: list[Finding], plans: list[EnginePlan]) -> str:
    """`STATUS - headline; also counts`: `check`'s status line before its performance data."""
    return str(verdict(findings, plans))


def count(n: int, severity: str) -> str:
    """`2 critical`, `1 warning`, `3 warnings`."""
    return f"{n} {severity}{'s' if severity == 'warning' and n != 1 else ''}"
