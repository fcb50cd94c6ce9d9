"""HelpScreen: the keys, what the bars mean, and where the numbers come from."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
[b]Keys[/b]
  q quit    ? or h this help    p planner    tab next panel    s sort processes
  g GB / GiB    space pause    r record on/off    + / - refresh faster / slower    enter details
  f forensics of the last minutes (a replay: all of it): markers, who grew, why an engine exited

[b]Each GPU[/b]
  measured  what NVML reports now: each process (█ engine, ▓ other), ▒ memory no process
            accounts for, ░ driver reserved, · free
  planned   the plan on the same scale: █ weights, ▓ context and non-torch, ▒ activations and
            CUDA graphs, ▆ KV pool, ░ what the utilization setting leaves, · spare
  The table beside it holds plan vs measured per band and the difference.

[b]Units[/b]  GB = 10^9 bytes, GiB = 2^30 bytes (7.4 % apart); `g` switches.
[b]Sources[/b]  NVML per GPU and per process; the engine's /metrics and /v1/models; a demo node
or a recording.
"""


class HelpScreen(ModalScreen[None]):
    """Closes on escape, q, ? or h."""

    BINDINGS = [Binding("escape,q,question_mark,h", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(HELP, id="help-text")
