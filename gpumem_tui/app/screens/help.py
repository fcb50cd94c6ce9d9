"""HelpScreen: the keys, what the bars mean, and where the numbers come from; on the fleet screen, the fleet's
keys and what its tables say."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gpumem_tui.glyphs import Glyphs

CLOSE = "escape, q, ? or h closes this help"

# One entry or paragraph a line, never wrapped here: the box reflows each to its width (a line wrapped by hand
# at 115 characters broke mid-phrase in a box 98 wide).
HELP = "\n".join(
    [
        "[b]Keys[/b]  ({close})",
        "  q  quit (back to the fleet when opened from it)",
        "  ? or h  this help",
        "  p  planner",
        "  s  sort processes",
        "  g  GB / GiB",
        "  space  pause",
        "  r  record on/off",
        "  + / -  refresh faster / slower",
        "  tab  next panel",
        "  enter  on a GPU: its full card, then every field; on a process: its sheet (user, start, engine, command)",
        "  up / down  from GPU to GPU while each GPU is one line",
        "  k  on a process: SIGTERM after you confirm, SIGKILL offered if it is still there after a few seconds "
        "(another user's process only as root; not on a recording or a node read from Prometheus)",
        "  f  forensics of the last minutes (a replay: all of it; a node in Prometheus: its --history): markers, "
        "who grew, why an engine exited",
        "",
        "[b]Each GPU[/b]",
        "  measured  what NVML reports now: each process ({engine} engine, {process} other), {unattributed} memory "
        "no process accounts for, {driver} driver reserved, {free} free",
        "  planned  the plan on the same scale: {weights} weights, {runtime} context and non-torch, {activations} "
        "activations and CUDA graphs, {kv} KV pool, {reserve} what the utilization setting leaves, {spare} spare",
        "  The table beside it holds plan vs measured per band and the difference.",
        "",
        "[b]Units[/b]  GB = 10^9 bytes, GiB = 2^30 bytes (7.4 % apart); `g` switches.",
        "[b]Sources[/b]  NVML per GPU and per process; the engine's /metrics and /v1/models; a demo node or a "
        "recording; or one node's series in Prometheus (`--prometheus URL --node NAME`, or enter on the fleet "
        "screen's node: escape goes back), where pods stand in for processes.",
    ]
)


FLEET_HELP = "\n".join(
    [
        "[b]Keys[/b]  ({close})",
        "  enter  on a node: its own screen, judged as `gpumem-tui` judges a node; q or escape there comes back here",
        "  up / down  move in a table",
        "  tab  next table",
        "  r  read the fleet now",
        "  g  GB / GiB, here and on the nodes opened from here",
        "  ? or h  this help",
        "  q  quit",
        "",
        "[b]Tables[/b]  nodes, most severe first; the fleet's findings by code, with the nodes each names; each "
        "model's replicas. A note under a table says what could not be read, and why.",
        "[b]Units[/b]  GB = 10^9 bytes, GiB = 2^30 bytes (7.4 % apart); `g` switches. The history's totals are "
        "in binary units (TiB, GiB).",
        "[b]Source[/b]  A Prometheus (`fleet --prometheus URL`) or the simulated fleet (`fleet --demo`); "
        "`fleet check` prints the same verdict as text. The first frame from a Prometheus is a first look, which "
        "says so: the join of pods to GPUs and the engines follow at once.",
    ]
)


class HelpScreen(ModalScreen[None]):
    """Closes on escape, q, ? or h (said in its text and on its border). `glyphs`: what the bars are drawn
    with, for the legend; `text`: the node screen's help, or the fleet's (FLEET_HELP)."""

    BINDINGS = [Binding("escape,q,question_mark,h", "dismiss", "close")]

    def __init__(self, glyphs: Glyphs, text: str = HELP) -> None:
        super().__init__()
        self.glyphs, self.text = glyphs, text

    def compose(self) -> ComposeResult:
        box = VerticalScroll(id="help-box")
        box.border_subtitle = CLOSE
        with box:
            # The legend in the characters the bars are drawn with (ASCII under --ascii).
            yield Static(self.text.format_map({**self.glyphs.fill, "close": CLOSE}), id="help-text")
