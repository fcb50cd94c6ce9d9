"""`check`'s verdict as a monitoring plugin reports it (Nagios plugin guidelines): the exit code (0 OK,
1 WARNING, 2 CRITICAL, 3 UNKNOWN) and the status line `STATUS - summary | perfdata` that names the worst
finding, so the first line drops into Nagios, Icinga, Sensu or a cron mail as it is."""

from __future__ import annotations

from gpumem_tui.cli.errors import UNKNOWN
from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.findings import Finding
from gpumem_tui.diagnosis.findings.headline import STATUS, headline, level, ranked, status
from gpumem_tui.models import Sample
from gpumem_tui.text import literal

__all__ = ["STATUS", "UNKNOWN", "exit_code", "headline", "perfdata", "plugin_text", "ranked", "status_line"]


def exit_code(findings: list[Finding]) -> int:
    """0 nothing above info, 1 a warning, 2 a critical finding: the status line's level."""
    return level(findings)


def plugin_text(value: object, missing: str = "-") -> str:
    """Outside text fit for plugin output: `literal` (no control characters, so no newline), and no `|`,
    which would start performance data in the status line and in every line after it."""
    return _no_bar(literal(value, missing))


def _no_bar(text: str) -> str:
    return text.replace("|", "\N{BROKEN BAR}")


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
    line = _no_bar(status(findings, plans))
    perf = perfdata(sample)
    return f"{line} | {perf}" if perf else line
