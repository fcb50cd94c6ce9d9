"""HelpScreen: the keys, what the bars mean, and where the numbers come from."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gpumem_tui.glyphs import Glyphs

HELP = """\
[b]Keys[/b]
  q quit    ? or h this help    p planner    tab next panel    s sort processes
  g GB / GiB    space pause    r record on/off    + / - refresh faster / slower    enter details
  f forensics of the last minutes (a replay: all of it; a node in Prometheus: its --history): markers, who grew, why an engine exited

[b]Each GPU[/b]
  measured  what NVML reports now: each process ({engine} engine, {process} other), {unattributed} memory no process
            accounts for, {driver} driver reserved, {free} free
  planned   the plan on the same scale: {weights} weights, {runtime} context and non-torch, {activations} activations and
            CUDA graphs, {kv} KV pool, {reserve} what the utilization setting leaves, {spare} spare
  The table beside it holds plan vs measured per band and the difference.

[b]Units[/b]  GB = 10^9 bytes, GiB = 2^30 bytes (7.4 % apart); `g` switches.
[b]Sources[/b]  NVML per GPU and per process; the engine's /metrics and /v1/models; a demo node
or a recording; or one node's series in Prometheus (`--prometheus URL --node NAME`, or enter on the fleet
screen's node: escape goes back), where pods stand in for processes.
"""  # noqa: E501 - the legend's fields are longer than the characters they become


class HelpScreen(ModalScreen[None]):
    """Closes on escape, q, ? or h. `glyphs`: what the bars are drawn with, for the legend."""

    BINDINGS = [Binding("escape,q,question_mark,h", "dismiss", "close")]

    def __init__(self, glyphs: Glyphs) -> None:
        super().__init__()
        self.glyphs = glyphs

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            # The legend in the characters the bars are drawn with (ASCII under --ascii).
            yield Static(HELP.format_map(self.glyphs.fill), id="help-text")
