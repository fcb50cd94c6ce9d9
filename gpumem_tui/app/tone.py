"""Colours for text built in code, taken from the app's theme (never hard-coded), so light and dark
themes both read and NO_COLOR (which Textual applies at render) strips them."""

from __future__ import annotations

from rich.style import Style
from textual.app import App

TONES = ("error", "warning", "success", "accent", "primary")


def tone(app: App, name: str, bold: bool = False) -> Style:
    """The theme's `error`, `warning`, `success`, `accent` or `primary` colour as a rich Style."""
    color = getattr(app.current_theme, name, None) if name in TONES else None
    return Style(color=color, bold=bold) if color else Style(bold=bold)


SEVERITY = {"critical": ("error", True), "warning": ("warning", True), "info": (None, False)}
STATE = {"ok": ("success", False), "stale": ("warning", False), "down": ("error", True)}


def severity_style(app: App, severity: str) -> Style:
    name, bold = SEVERITY.get(severity, (None, False))
    return tone(app, name, bold) if name else Style(dim=True)


def state_style(app: App, state: str) -> Style:
    name, bold = STATE.get(state, ("warning", False))
    return tone(app, name, bold)
