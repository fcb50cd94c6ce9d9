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
from gpumem_tui.cli.check_status import plugin_text
from gpumem_tui.cli.check_text import INDENT, Part, lines
from gpumem_tui.cli.output import table
from gpumem_tui.diagnosis.autoplan import EnginePlan, planned
from gpumem_tui.diagnosis.forensics import Forensics, grew_over, nobody_grew
from gpumem_tui.planner.sglang.records import SglangPrediction
from gpumem_tui.units import fmt, gib


def rendered(checked: Checked, out: Console, verbose: bool = False) -> str:
    """The whole text, rendered before anything is written: a failure half-way leaves stdout empty."""
    with out.capture() as captured:
        render(checked, out, verbose)
    return captured.get()


def render(checked: Checked, out: Console, verbose: bool = False) -> None:
    for parts, layout in lines(checked):
        if layout == "wrapped":
            out.print(_text(parts))
        elif layout == "indented":
            _indented(out, _text(parts))
        else:
            out.print(_text(parts), soft_wrap=True)
    if not verbose:
        return
    for plan in checked.plans:
        _plan(plan, out)
    if checked.forensics is not None:
        walked = "history" if checked.forensics_of is not None else checked.walked
        _forensics(checked.forensics, out, checked.forensics_of, checked.origin_s, walked)


def _text(parts: list[Part]) -> Text:
    """The parts as one Text, the first part's style the whole line's (as `Text(...) + Text(...)` makes it)."""
    (first, style), *rest = parts
    text = Text(first, style=style)
    for more, more_style in rest:
        text = text + Text(more, style=more_style)
    return text


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
    p = planned(plan)
    for line in p.assumed if p else []:
        out.print(Text(f"  assumed: {plugin_text(line)}"))
    for line in plan.prediction.term_lines() if plan.prediction else []:
        out.print(Text(f"  term:    {line}"))
    for line in sglang_lines(plan.sglang) if plan.sglang else []:
        out.print(Text(f"  sglang:  {line}"))


def sglang_lines(p: SglangPrediction) -> list[str]:
    """SGLang's sizing of a running engine in a few lines: the fraction, the pool, and what the rest holds."""
    return [
        f"mem_fraction_static {p.mem_fraction_static:.3f} ({p.fraction_rule}) of {gib(p.total_bytes)} free before "
        f"the weights load; weights {gib(p.weights_bytes)}",
        f"KV pool {p.kv_cache_tokens:,} tokens x {p.cell_bytes:,} B = {gib(p.kv_cache_bytes)}; "
        f"max_running_requests {p.max_running_requests:,}",
        f"left after the pool {gib(p.left_after_pool_bytes)}; CUDA graphs {gib(p.cudagraph_bytes)}, activations "
        f"{gib(p.activation_bytes)}, workspace {gib(p.workspace_bytes)}; left after them "
        f"{gib(p.left_after_graphs_bytes)}",
    ]


def _forensics(
    forensics: Forensics, out: Console, what: str | None = None, origin_s: float = 0.0, walked: str = "recording"
) -> None:
    """`what`: what was walked, when not the recording (a node's history in Prometheus). `origin_s`: where the
    walk began in the header's time base (a scenario's seconds), added to every offset so one base is said;
    `walked`: what that base counts into (`recording`, `scenario`, `history`)."""
    out.print()
    if what is not None:
        out.print(Text(f"Forensics of {plugin_text(what)}: {forensics.end_offset_s:,.0f} s"), soft_wrap=True)
    for note in forensics.notes:
        out.print(Text(plugin_text(note)), soft_wrap=True)
    rows = [
        [
            f"{origin_s + m.offset_s:,.0f} s",
            "" if m.gpu_index is None else str(m.gpu_index),
            m.severity or "",
            plugin_text(m.text),
        ]
        for m in forensics.markers
    ]
    if rows:
        out.print(Text(f"Timeline (seconds into the {walked})"), soft_wrap=True)  # a table's title wraps to its width
        out.print(table(None, ["at", "GPU", "severity", "what"], rows, right={0}))
    else:  # no header over no rows
        out.print("Timeline: no process started or exited, and no finding was raised.")
    if forensics.first_critical is None:
        out.print(f"Nothing critical was found in this {walked}.")
        return
    out.print(
        Text(
            f"\nFirst critical finding at {origin_s + (forensics.first_critical_offset_s or 0):,.0f} s: "
            f"{plugin_text(forensics.first_critical.title)}"
        )
    )
    # Its own line, not the table's title: a title wraps to the table's width.
    if not forensics.who_grew:
        out.print(Text(nobody_grew(forensics)), soft_wrap=True)
        return
    out.print(Text(f"Who grew in {grew_over(forensics)}, unexpected first:"), soft_wrap=True)
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
    out.print(table(None, ["GPU", "pid", "name", "from", "to", "growth", "why"], rows, right={1, 3, 4, 5}))
