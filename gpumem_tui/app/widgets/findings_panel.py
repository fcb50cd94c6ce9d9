"""FindingsPanel: what needs a look, most severe first: the title, then the numbers and what to try."""

from __future__ import annotations

from rich.console import Group
from rich.padding import Padding
from rich.text import Text
from textual.widgets import Static

from gpumem_tui.app.quiet import update
from gpumem_tui.app.tone import severity_style
from gpumem_tui.findings.records import Finding
from gpumem_tui.text import literal

INDENT = 9


class FindingsPanel(Static):
    """Warnings and critical findings carry their explanation (wrapped lines stay indented); info
    findings stay one dim line."""

    def show(self, findings: list[Finding], clear: str) -> None:
        """`clear`: what is said when nothing needs a look (as `check` says it, from the plans compared)."""
        key = (clear, *((f.severity, f.title, f.explanation, f.try_this) for f in findings))
        if not any(f.severity != "info" for f in findings):
            lines = [Text(clear, style="dim")]
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
