"""`check`'s verdict as a monitoring plugin reports it (Nagios plugin guidelines): the exit code (0 OK,
1 WARNING, 2 CRITICAL, 3 UNKNOWN) and the status line `STATUS - summary | perfdata` that names the worst
finding, so the first line drops into Nagios, Icinga, Sensu or a cron mail as it is."""

from __future__ import annotations

from gpumem_tui.autoplan import EnginePlan
from gpumem_tui.findings import SEVERITY_ORDER, Finding, worst
from gpumem_tui.findings.differ import compared
from gpumem_tui.findings.records import all_clear
from gpumem_tui.models import Sample
from gpumem_tui.text import literal

STATUS = ("OK", "WARNING", "CRITICAL", "UNKNOWN")
"""Status words by exit code."""
UNKNOWN = 3
"""Bad input, no data source, or a failure inside `check`: the node's state is not known."""


def exit_code(findings: list[Finding]) -> int:
    """0 nothing above info, 1 a warning, 2 a critical finding."""
    return SEVERITY_ORDER[worst(findings) or "info"]


def plugin_text(value: object, missing: str = "-") -> str:
    """Outside text fit for plugin output: `literal` (no control characters, so no newline), and no `|`,
    which would start performance data in the status line and in every line after it."""
    return literal(value, missing).replace("|", "\N{BROKEN BAR}")


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


def summary(findings: list[Finding], plans: list[EnginePlan]) -> str:
    """The status line's text: how many findings of each severity that counts, and the headline's title."""
    first = headline(findings)
    if first is None:
        return _no_findings(plans)
    counted = [f for f in findings if f.severity != "info"] or findings
    if len(counted) == 1:
        return plugin_text(first.title)
    counts = ", ".join(
        _count(sum(f.severity == severity for f in counted), severity)
        for severity in ("critical", "warning", "info")
        if any(f.severity == severity for f in counted)
    )
    return f"{counts}: {plugin_text(first.title)}"


def _count(n: int, severity: str) -> str:
    return f"{n} {severity}{'s' if severity == 'warning' and n != 1 else ''}"


def _no_findings(plans: list[EnginePlan]) -> str:
    return plugin_text(all_clear(*compared(plans)))


def perfdata(sample: Sample) -> str:
    """Memory used per GPU as Nagios performance data, `gpuN_used=BYTESB;;;0;TOTAL` (U when unknown).
    No warn/crit ranges: the thresholds depend on each engine's plan, not on a fixed share of the card."""
    return " ".join(
        f"gpu{gpu.index}_used={'U' if gpu.memory_used_bytes is None else f'{gpu.memory_used_bytes}B'};;;0;"
        + ("" if gpu.memory_total_bytes is None else str(gpu.memory_total_bytes))
        for gpu in sample.gpus
    )


def status_line(findings: list[Finding], plans: list[EnginePlan], sample: Sample) -> str:
    """`STATUS - summary`, then ` | perfdata` when the sample has GPUs."""
    line = f"{STATUS[exit_code(findings)]} - {summary(findings, plans)}"
    perf = perfdata(sample)
    return f"{line} | {perf}" if perf else line
