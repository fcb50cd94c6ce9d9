"""`check` for a person: the findings, most severe first, what each plan found and assumed, and on a
recording the timeline markers and who grew before the first critical finding."""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from gpumem_tui.autoplan import EnginePlan
from gpumem_tui.cli.check_sources import Checked
from gpumem_tui.cli.output import table
from gpumem_tui.forensics import Forensics
from gpumem_tui.text import literal
from gpumem_tui.units import fmt

STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}


def render(checked: Checked, out: Console) -> None:
    out.print(Text(f"check: {literal(checked.where)}", style="bold"))
    if not checked.findings:
        out.print("No findings: the node matches its plan.")
    for finding in checked.findings:
        out.print(
            Text(f"{finding.severity.upper():9}", style=STYLE[finding.severity])
            + Text(f"{finding.code}  {literal(finding.title)}")
        )
        out.print(Padding(Text(literal(finding.explanation)), (0, 0, 0, 10)))
        out.print(Padding(Text(f"try: {literal(finding.try_this)}", style="dim"), (0, 0, 0, 10)))
    for plan in checked.plans:
        _plan(plan, out)
    if checked.forensics is not None:
        _forensics(checked.forensics, out)


def _plan(plan: EnginePlan, out: Console) -> None:
    out.print(
        Text(
            f"\n{plan.label} plan for {literal(plan.endpoint, 'this node')}: {literal(plan.model, 'model unknown')}"
            + (f" on GPU {', '.join(map(str, plan.gpu_indices))}" if plan.gpu_indices else "")
        )
    )
    if plan.missing:
        out.print(Text(f"  no prediction: {literal(plan.missing)}"))
    for fact in plan.found:
        out.print(Text(f"  found:   {literal(fact)}"))
    for fact in plan.assumed:
        out.print(Text(f"  assumed: {literal(fact)}"))


def _forensics(forensics: Forensics, out: Console) -> None:
    out.print()
    rows = [
        [f"{m.offset_s:,.0f} s", "" if m.gpu_index is None else str(m.gpu_index), m.severity or "", literal(m.text)]
        for m in forensics.markers
    ]
    out.print(table("Timeline (seconds into the recording)", ["at", "GPU", "severity", "what"], rows, right={0}))
    if forensics.first_critical is None:
        out.print("Nothing critical was found in this recording.")
        return
    out.print(
        Text(
            f"\nFirst critical finding at {forensics.first_critical_offset_s:,.0f} s: "
            f"{literal(forensics.first_critical.title)}"
        )
    )
    rows = [
        [
            str(g.gpu_index),
            str(g.pid),
            literal(g.name, "?"),
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


def plan_json(plan: EnginePlan) -> dict:
    """The documented `plans` entry of `check --json`."""
    p = plan.prediction
    return {
        "endpoint": plan.endpoint,
        "model": plan.model,
        "label": plan.label,
        "gpu_indices": plan.gpu_indices,
        "users": plan.users,
        "found": plan.found,
        "assumed": plan.assumed,
        "missing": plan.missing,
        "weights_bytes": p.weights_bytes if p else None,
        "kv_cache_bytes": p.kv_cache_bytes if p else None,
        "kv_cache_tokens": p.kv_cache_tokens if p else None,
        "max_model_len": p.max_model_len if p else None,
    }
