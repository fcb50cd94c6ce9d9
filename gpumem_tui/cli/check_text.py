"""`check`'s lines before any layout: the status line, where it looked, the cards, each finding with its
explanation and what to try (check_view.py lays them out with rich, styled and wrapped on a terminal).

A monitoring system reads `check` on a pipe, where rich would write each line as it is, unstyled: `on_pipe` writes
them so without loading rich (about a tenth of the command's CPU). Where rich would do more, it is left to rich:
a terminal, FORCE_COLOR or TTY_COMPATIBLE as rich reads them (it then styles a pipe), --verbose (tables), or a line
rich would wrap (the cards' line over the narrowest pipe width, or not plain ASCII)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Literal

from gpumem_tui.cli.check_sources import Checked
from gpumem_tui.cli.check_status import plugin_text, ranked, status_line
from gpumem_tui.models import Sample
from gpumem_tui.text import short_bus_id

STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}
INDENT = 10
PIPE_WIDTH = 160
"""The narrowest width `output.console` gives a pipe: a line this long is never wrapped there."""
STYLING = ("FORCE_COLOR", "TTY_COMPATIBLE")
"""The variables by which rich may style a pipe (`styled_pipe`)."""

Part = tuple[str, str]
"""A run of text and its rich style ('' for none)."""
Layout = Literal["line", "wrapped", "indented"]
"""One line whatever its length; wrapped at the width; a paragraph under its finding."""


def lines(checked: Checked) -> list[tuple[list[Part], Layout]]:
    """What `check` says without --verbose, line by line, with how each is laid out."""
    said: list[tuple[list[Part], Layout]] = [
        ([(status_line(checked.findings, checked.plans, checked.sample), "bold")], "line")
    ]
    driver = checked.sample.driver_version
    where = f"check: {plugin_text(checked.where)}" + (f", driver {plugin_text(driver)}" if driver else "")
    said.append(([(where, "")], "line"))
    cards = _cards(checked.sample)
    if cards:
        said.append(([(f"GPUs: {cards}", "")], "wrapped"))
    for finding in ranked(checked.findings):
        severity = (f"{finding.severity.upper():{INDENT - 1}}", STYLE[finding.severity])
        said.append(([severity, (f"{finding.code}  {plugin_text(finding.title)}", "")], "line"))
        said.append(([(plugin_text(finding.explanation), "")], "indented"))
        said.append(([(f"try: {plugin_text(finding.try_this)}", "dim")], "indented"))
    for d in checked.differences or []:
        side = "here, not in `fleet check`" if d.only_in == "node" else "in `fleet check`, not here"
        why = d.why or "not explained: please report it"
        said.append(([(f"fleet: {d.code} ({d.severity}) {side}: {plugin_text(why)}", "dim")], "line"))
    return said


def on_pipe(checked: Checked) -> str | None:
    """The text as rich writes it to a pipe (no style, no wrap, no trailing spaces), or None where rich is needed
    to write it (the module's docstring)."""
    if sys.stdout.isatty() or styled_pipe(os.environ):
        return None
    out = []
    for parts, layout in lines(checked):
        text = "".join(text for text, _ in parts)
        if layout == "wrapped" and (len(text) > PIPE_WIDTH or not text.isascii()):
            return None
        out.append((" " * INDENT if layout == "indented" else "") + text)
    return "".join(line.rstrip(" ") + "\n" for line in out)


def styled_pipe(environ: Mapping[str, str]) -> bool:
    """Whether rich takes a pipe for a terminal, by its own rule (`Console.is_terminal`): TTY_COMPATIBLE `1` or
    `0` decides; otherwise a FORCE_COLOR that is set and not empty (CI runners may set it empty)."""
    compatible = environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    return environ.get("FORCE_COLOR", "") != ""


def _cards(sample: Sample) -> str:
    """`0 18:00.0, 1 26:00.0`: which card each NVML index the findings name is (NVML's order is not CUDA's),
    as the TUI's cards and `snapshot` name them; empty when the driver (or an older recording) gave no bus id."""
    if not any(gpu.bus_id for gpu in sample.gpus):
        return ""
    return ", ".join(f"{gpu.index} {plugin_text(short_bus_id(gpu.bus_id))}" for gpu in sample.gpus)
