"""`check` as text: the status line, where it looked, the findings (the headline first, then most severe
first) with their numbers and what to try; with --verbose also what each plan found and assumed and, on a
recording, the timeline markers and who grew before the first critical finding.

Outside text goes through `plugin_text` (no control characters, no `|`, which a monitoring system reads
as the start of performance data). On a pipe, no line is wrapped: one finding's numbers stay one line."""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from gpumem_tui.cli.check_sources import Checked
from gpumem_tui.cli.check_status import plugin_text, ranked, status_line
from gpumem_tui.cli.output import table
from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.forensics import Forensics
from gpumem_tui.models import Sample
from gpumem_tui.text import short_bus_id
from gpumem_tui.units import fmt

STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}


INDENT = 10


def rendered(checked: Checked, out: Console, verbose: bool = False) -> str:
    """The whole text, rendered before anything is written: a failure half-way leaves stdout empty."""
    with out.capture() as captured:
        render(checked, out, verbose)
    return captured.get()


def render(checked: Checked, out: Console, verbose: bool = False) -> None:
    out.print(Text(status_line(checked.findings, checked.plans, checked.sample), style="bold"), soft_wrap=True)
    driver = checked.sample.driver_version
    out.print(
        Text(f"check: {plugin_text(checked.where)}" + (f", driver {plugin_text(driver)}" if driver else "")),
        soft_wrap=True,
    )
    cards = _cards(checked.sample)
    if cards:
        out.print(Text(f"GPUs: {cards}"))
    for finding in ranked(checked.findings):
        out.print(
            Text(f"{finding.severity.upper():{INDENT - 1}}", style=STYLE[finding.severity])
            + Text(f"{finding.code}  {plugin_text(finding.title)}"),
            soft_wrap=True,
        )
        _indented(out, Text(plugin_text(finding.explanation)))
        _indented(out, Text(f"try: {plugin_text(finding.try_this)}", style="dim"))
    for d in checked.differences or []:
        side = "here, not in `fleet check`" if d.only_in == "node" else "in `fleet check`, not here"
        why = d.why or "not explained: please report it"
        out.print(Text(f"fleet: {d.code} ({d.severity}) {side}: {plugin_text(why)}", style="dim"), soft_wrap=True)
    if not verbose:
        return
    for plan in checked.plans:
        _plan(plan, out)
    if checked.forensics is not None:
        _forensics(checked.forensics, out, checked.forensics_of)


def _cards(sample: Sample) -> str:
    """`0 18:00.0, 1 26:00.0`: which card each NVML index the findings name is (NVML's order is not CUDA's),
    as the TUI's cards and `snapshot` name them; empty when the driver (or an older recording) gave no bus id."""
    if not any(gpu.bus_id for gpu in sample.gpus):
        return ""
    return ", ".join(f"{gpu.index} {plugin_text(short_bus_id(gpu.bus_id))}" for gpu in sample.gpus)


def _indented(out: Console, text: Text) -> None:
    """A paragraph under its finding: wrapped with a hanging indent on a terminal, one line on a pipe."""
    if out.is_terminal:
        out.print(Padding(text, (0, 0, 0, INDENT)))
    else:
        out.print(Text(" " * INDENT) + text, soft_wrap=True)


def _plan(plan: EnginePlan, out: Console) -> None:
    out.print(
        Text(
            f"\n{plan.label} plan for {plugin_text(plan.endpoint, 'this node')}: "
            f"{plugin_text(plan.model, 'model unknown')}"
            + (f" on GPU {', '.join(map(str, plan.gpu_indices))}" if plan.gpu_indices else "")
        )
    )
    if plan.missing:
        out.print(Text(f"  no prediction: {plugin_text(plan.missing)}"))
    for fact in plan.found:
        out.print(Text(f"  found:   {plugin_text(fact)}"))
    for fact in plan.assumed:
        out.print(Text(f"  assumed: {plugin_text(fact)}"))
    for line in plan.prediction.assumed if plan.prediction else []:
        out.print(Text(f"  assumed: {plugin_text(line)}"))
    for line in plan.prediction.term_lines() if plan.prediction else []:
        out.print(Text(f"  term:    {line}"))


def _forensics(forensics: Forensics, out: Console, what: str | None = None) -> None:
    """`what`: what was walked, when not the recording (a node's history in Prometheus)."""
    out.print()
    if what is not None:
        out.print(Text(f"Forensics of {plugin_text(what)}: {forensics.end_offset_s:,.0f} s"), soft_wrap=True)
    for note in forensics.notes:
        out.print(Text(plugin_text(note)), soft_wrap=True)
    rows = [
        [f"{m.offset_s:,.0f} s", "" if m.gpu_index is None else str(m.gpu_index), m.severity or "", plugin_text(m.text)]
        for m in forensics.markers
    ]
    into = "the recording" if what is None else "the history"
    out.print(table(f"Timeline (seconds into {into})", ["at", "GPU", "severity", "what"], rows, right={0}))
    if forensics.first_critical is None:
        out.print(f"Nothing critical was found in this {'recording' if what is None else 'history'}.")
        return
    out.print(
        Text(
            f"\nFirst critical finding at {forensics.first_critical_offset_s:,.0f} s: "
            f"{plugin_text(forensics.first_critical.title)}"
        )
    )
    rows = [
        [
            str(g.gpu_index),
            str(g.pid),
            plugin_text(g.name, "?"),
            fmt(g.start_bytes, "GiB", 2),
            fmt(g.end_bytes, "GiB", 2),
            "+" + fmt(g.growth_bytes, "GiB", 2),
            g.why,
        ]
        for g in forensics.who_grew
    ]
    out.print(
        table(
            f"Who grew in the {forensics.window_s:,.0f} s before it (unexpected first)",
            ["GPU", "pid", "name", "from", "to", "growth", "why"],
            rows,
            right={1, 3, 4, 5},
        )
    )
