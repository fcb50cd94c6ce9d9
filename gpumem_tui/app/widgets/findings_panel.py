"""FindingsPanel: what needs a look, most severe first: the title, then the numbers and what to try."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from gpumem_tui.app.quiet import update
from gpumem_tui.app.tone import severity_style
from gpumem_tui.findings.records import Finding
from gpumem_tui.text import literal


class FindingsPanel(Static):
    """Warnings and critical findings carry their explanation; info findings stay one dim line."""

    def show(self, findings: list[Finding]) -> None:
        if not any(f.severity != "info" for f in findings):
            text = Text("Nothing needs a look: the node agrees with the plan.", style="dim")
            for finding in findings:
                text.append(f"\ninfo     {literal(finding.title)}", style="dim")
            update(self, text)
            return
        text = Text()
        for i, finding in enumerate(findings):
            if i:
                text.append("\n")
            text.append(f"{finding.severity.upper():<8} ", style=severity_style(self.app, finding.severity))
            text.append(literal(finding.title), style="bold" if finding.severity != "info" else "dim")
            if finding.severity != "info":
                text.append(f"\n         {literal(finding.explanation)}", style="")
                text.append(f"\n         try: {literal(finding.try_this)}", style="dim")
        update(self, text)
