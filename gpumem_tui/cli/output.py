"""Printing for the command line: a rich console that never reads outside text as markup, and JSON. Rich is
imported by what draws with it: JSON, and a reader that leaves early, need none of it."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO, cast

from gpumem_tui.text import literal

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def console() -> Console:
    """Markup, emoji and highlighting off: names from outside are printed literally. NO_COLOR is honoured.

    Piped output is not cut at 80 columns (tables of names and numbers stay whole for grep and less),
    and its lines carry no trailing padding: rich pads table cells and wrapped text to the width."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(markup=False, emoji=False, highlight=False, soft_wrap=False)
    import shutil  # with lzma and bz2: not for a terminal

    width = max(shutil.get_terminal_size((160, 24)).columns, 160)
    return Console(
        file=cast(TextIO, TrimmedLines(sys.stdout)),  # a TextIOBase is what rich writes to; its stubs say IO
        markup=False,
        emoji=False,
        highlight=False,
        width=width,
        soft_wrap=False,
    )


class TrimmedLines(io.TextIOBase):
    """A text stream that writes each complete line to `target` without its trailing spaces."""

    def __init__(self, target: TextIO):
        self._target, self._pending = target, ""

    def write(self, text: str) -> int:
        *lines, self._pending = (self._pending + text).split("\n")
        for line in lines:
            self._target.write(line.rstrip(" ") + "\n")
        return len(text)

    def flush(self) -> None:
        # A partial line is written as it is: nothing can tell padding from text before its end.
        if self._pending:
            self._target.write(self._pending)
            self._pending = ""
        self._target.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", None) or "utf-8"


@contextmanager
def reader_may_leave() -> Iterator[None]:
    """Wrap a command's printing: a reader that stops early (`| head -1`) cuts the output short but does
    not change the exit status the command computed before printing."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_gone()


def stdout_gone() -> None:
    """After a broken pipe: point stdout at /dev/null, so that what is still buffered is dropped quietly
    instead of failing again at exit (Python would then print a warning and exit 120)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def table(title: str | None, headers: list[str], rows: list[list[Any]], right: set[int] | None = None) -> Table:
    """A plain table; every str cell becomes literal Text (never parsed as markup; escapes shown)."""
    from rich.table import Table
    from rich.text import Text

    out = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None, header_style="bold")
    for i, header in enumerate(headers):
        out.add_column(header, justify="right" if right and i in right else "left")
    for row in rows:
        out.add_row(*(cell if isinstance(cell, Text) else Text(literal(str(cell))) for cell in row))
    return out


def print_json(data: Any) -> None:
    """Strict JSON (no NaN or Infinity: records hold no such reading), rendered whole before any of it is
    written, so a value that cannot be written leaves stdout empty rather than cut."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n")


def say(out: Console, text: str, style: str = "") -> None:
    """One line of output whose text may hold outside names: printed literally, escapes shown."""
    from rich.text import Text

    out.print(Text(literal(text), style=style))
