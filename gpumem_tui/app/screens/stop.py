"""StopScreen: `k` on a process row. It asks before each signal (app/stopping.py words it), sends SIGTERM, waits
a few seconds for the process to end, and offers SIGKILL when it has not; each signal's outcome goes back to
the node screen, which says it and records it."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from gpumem_tui.app.stopping import WAIT_S, Outcome, Question, Target, asking, signal_and_wait
from gpumem_tui.sources.signals import Stopper, signal_name
from gpumem_tui.units import Unit


class StopScreen(ModalScreen[None]):
    """`y` sends the signal asked about; `n` or escape closes without one (after SIGTERM: leaves it running).
    Neither acts while it waits for a signal's outcome (at most `wait_s`)."""

    BINDINGS = [Binding("y", "send", "send"), Binding("n,escape", "dismiss", "cancel")]

    def __init__(
        self, process: Target, stopper: Stopper, unit: Unit, said: Callable[[Outcome], None], wait_s: float = WAIT_S
    ):
        """`said`: what the node screen does with each outcome (say it, record it, read the node again)."""
        super().__init__()
        self.process, self.stopper, self.unit, self.said, self.wait_s = process, stopper, unit, said, wait_s
        self.force = False
        self.sending = False

    def compose(self) -> ComposeResult:
        with Vertical(id="stop-box"):
            yield Static(id="stop-text")
            yield Static(id="stop-keys", classes="dim")

    def on_mount(self) -> None:
        self._ask()

    def _ask(self) -> None:
        self.query_one("#stop-text", Static).update(_shown(asking(self.process, self.unit, self.force, self.wait_s)))
        leave = "leave it running" if self.force else "cancel"
        self.query_one("#stop-keys", Static).update(f"y: send {signal_name(self.force)}    n or escape: {leave}")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:  # noqa: ARG002
        """While a signal is out and the sheet waits for its outcome, no key sends another or closes it: the
        outcome is said and recorded before the sheet goes."""
        return not self.sending if action in ("send", "dismiss") else True

    def action_send(self) -> None:
        self.sending = True
        name = signal_name(self.force)
        self.query_one("#stop-keys", Static).update(
            f"{name} sent to pid {self.process.pid}; waiting up to {self.wait_s:.0f} s for it to end…"
        )
        self._send()

    @work(exclusive=True, exit_on_error=False)
    async def _send(self) -> None:
        result, why = await signal_and_wait(self.stopper, self.process, self.force, self.wait_s)
        self.said(Outcome(self.process, self.force, result, why, self.wait_s))
        if result == "running" and not self.force:
            self.force, self.sending = True, False
            self._ask()
            return
        self.dismiss()


def _shown(asked: Question) -> Group:
    """The question, the facts in a table whose values wrap under themselves, and what the signal does."""
    facts = Table(box=None, show_header=False, padding=(0, 2, 0, 2), expand=True)
    facts.add_column(style="bold", no_wrap=True)
    facts.add_column(overflow="fold", ratio=1)
    for name, value in asked.facts:
        facts.add_row(Text(name), Text(value))
    return Group(Text(asked.question, style="bold"), Text(""), facts, Text(""), Text(asked.note))
