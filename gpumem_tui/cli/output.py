"""Printing for the command line: a rich console that never reads outside text as markup, and JSON."""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpumem_tui.text import literal


def console() -> Console:
    """Markup, emoji and highlighting off: names from outside are printed literally. NO_COLOR is honoured."""
    # Piped output is not cut at 80 columns: tables of names and numbers stay whole for grep and less.
    width = None if sys.stdout.isatty() else max(shutil.get_terminal_size((160, 24)).columns, 160)
    return Console(markup=False, emoji=False, highlight=False, width=width, soft_wrap=False)


def table(title: str | None, headers: list[str], rows: list[list[Any]], right: set[int] | None = None) -> Table:
    """A plain table; every str cell becomes literal Text (never parsed as markup; escapes shown)."""
    out = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None, header_style="bold")
    for i, header in enumerate(headers):
        out.add_column(header, justify="right" if right and i in right else "left")
    for row in rows:
        out.add_row(*(cell if isinstance(cell, Text) else Text(literal(str(cell))) for cell in row))
    return out


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def say(out: Console, text: str, style: str = "") -> None:
    """One line of output whose text may hold outside names: printed literally, escapes shown."""
    out.print(Text(literal(text), style=style))
