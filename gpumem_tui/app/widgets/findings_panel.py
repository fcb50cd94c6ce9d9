"""FindingsPanel: what needs a look, most severe first: the title, then the numbers and what to try."""

from __future__ import annotations

from rich.console import Group
from rich.padding import Padding
from rich.text import Text
from textual.widgets import Static

from gpumem_tui.app.quiet import update
from gpumem_tui.app.tone import severity_style
from gpumem_tui.findings.records import Finding, all_clear
from gpumem_tui.text import literal

INDENT = 9


class FindingsPanel(Static):
    """Warnings and critical findings carry their explanation (wrapped lines stay indented); info
    findings stay one dim line."""

    def show(self, findings: list[Finding], compared: tuple[int, int] = (0, 0)) -> None:
        """`compared`: (plans compared with what runs, engines running), as `findings.differ.compared` counts
        them, so 'agrees with the plan' is said only of plans that were compared."""
        key = (compared, *((f.severity, f.title, f.explanation, f.try_this) for f in findings))
        if not any(f.severity != "info" for f in findings):
            lines = [Text(all_clear(*compared), style="dim")]
            lines += [Text(f"info     {literal(f.title)}", style="dim") for f in findings]
            update(self, Group(*lines), key=key, shape=len(lines))
            return
        parts: list = []
        for finding in findings:
            head = Text(f"{finding.severity.upper():<8} ", style=severity_style(self.app, finding.severity))
            head.append(literal(finding.title), style="bold" if finding.severity != "info" else "dim")
            parts.append(head)
            if finding.severity != "info":
                parts.append(Padding(Text(literal(finding.explanation)), (0, 0, 0, INDENT)))
                parts.append(Padding(Text(f"try: {literal(finding.try_this)}", style="dim"), (0, 0, 0, INDENT)))
        update(self, Group(*parts), key=key, shape=key)
