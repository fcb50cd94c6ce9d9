"""The characters bars, gauges, sparklines and marks are drawn with: one set for UTF-8 terminals and one in
plain ASCII (`--ascii`, or a terminal whose encoding is not UTF-8), chosen once at startup.

`TO_ASCII` maps each drawing character, and the few other non-ASCII characters the program prints, to
ASCII; `ascii_errors()` names a codec error handler that uses it, so output to an ASCII locale degrades
(`…` prints as `...`) instead of raising UnicodeEncodeError. No Textual, no Rich: the CLI uses it too.
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TextIO


@dataclass(frozen=True)
class Glyphs:
    """One way to draw: fill characters tell kinds apart without colour (NO_COLOR, monochrome terminals)."""

    fill: Mapping[str, str]
    """A memory bar's fill per kind of slice or band."""
    over: str
    """After a bar whose slices run past the card."""
    levels: str
    """Sparkline heights 0 to 8."""
    gauge: str
    """A gauge's filled cell; its empty cells use `fill["free"]`."""
    degree: str
    """Between a temperature and its `C`."""
    started: str
    exited: str
    """Forensics markers: a process started, a process exited."""


FILL = {  # a memory bar's kind of slice or band: (Unicode, ASCII)
    "engine": ("█", "#"),
    "process": ("▓", "="),
    "unattributed": ("▒", "+"),
    "driver": ("░", ":"),
    "free": ("·", "."),
    "weights": ("█", "#"),
    "runtime": ("▓", "="),
    "activations": ("▒", "+"),
    "graphs": ("▒", "+"),
    "kv": ("▆", "~"),
    "reserve": ("░", ":"),
    "spare": ("·", "."),
}
MARKS = {  # every other field of Glyphs: (Unicode, ASCII)
    "over": ("»", ">"),
    "levels": (" ▁▂▃▄▅▆▇█", " ._-:=+*#"),
    "gauge": ("█", "#"),
    "degree": ("°", ""),
    "started": ("▲", "^"),
    "exited": ("▼", "v"),
}


def _glyphs(side: int) -> Glyphs:
    """One side of FILL and MARKS: 0 Unicode, 1 ASCII."""
    fill = MappingProxyType({kind: pair[side] for kind, pair in FILL.items()})
    return Glyphs(fill=fill, **{name: pair[side] for name, pair in MARKS.items()})


UNICODE = _glyphs(0)
ASCII = _glyphs(1)


def _pairs(wide: Glyphs, narrow: Glyphs) -> dict[str, str]:
    """Each Unicode drawing character with its ASCII twin (the first kind using it decides)."""
    pairs: dict[str, str] = {}
    for kind, char in wide.fill.items():
        pairs.setdefault(char, narrow.fill[kind])
    for a, b in zip(wide.levels, narrow.levels, strict=True):
        pairs.setdefault(a, b)
    for name in ("over", "gauge", "degree", "started", "exited"):
        pairs.setdefault(getattr(wide, name), getattr(narrow, name))
    return pairs


TO_ASCII: Mapping[str, str] = MappingProxyType(
    {
        **_pairs(UNICODE, ASCII),
        # Text the program prints: predicted log lines, dashes, check's perfdata-safe bar, arrows.
        "…": "...",
        "—": "--",
        "–": "-",
        "¦": "!",
        "×": "x",
        "→": "->",
        "←": "<-",
        "≈": "~",
        "±": "+/-",
        "≤": "<=",
        "≥": ">=",
        "µ": "u",
        "‘": "'",
        "’": "'",
        "“": '"',
        "”": '"',
        "\u00a0": " ",
        # What a terminal UI draws around the content: box lines, corners, partial blocks of scrollbars.
        "─": "-",
        "━": "-",
        "│": "|",
        "┃": "|",
        "╭": "+",
        "╮": "+",
        "╰": "+",
        "╯": "+",
        "┌": "+",
        "┐": "+",
        "└": "+",
        "┘": "+",
        "├": "+",
        "┤": "+",
        "┬": "+",
        "┴": "+",
        "┼": "+",
        "▔": "-",
        "▀": "-",
        "▉": "#",
        "▊": "|",
        "▋": "|",
        "▌": "|",
        "▍": "|",
        "▎": "|",
        "▏": "|",
        "▐": "|",
    }
)

_HANDLER = "gpumem-ascii"


def _replace(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    bad = error.object[error.start : error.end]
    return "".join(TO_ASCII.get(ch, "?") for ch in bad), error.end


def ascii_errors() -> str:
    """The name of the codec error handler that writes `TO_ASCII`'s twin, or `?`, for what cannot be encoded."""
    try:
        codecs.lookup_error(_HANDLER)
    except LookupError:
        codecs.register_error(_HANDLER, _replace)
    return _HANDLER


def is_utf8(stream: TextIO | None) -> bool:
    """Whether a text stream encodes to UTF-8 (a stream without an encoding is taken to)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    return codecs.lookup(encoding).name == "utf-8"


def c_locale(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the locale's characters are C's (ASCII): the first of LC_ALL, LC_CTYPE and LANG that is set, as
    the C library reads them, is `C` or `POSIX` (none set is C too). Python's UTF-8 mode (PEP 540) turns on
    in that locale and makes its streams UTF-8, so a stream's encoding alone does not say it."""
    environ = os.environ if environ is None else environ
    chosen = next((environ[name] for name in ("LC_ALL", "LC_CTYPE", "LANG") if environ.get(name)), "C")
    return chosen in ("C", "POSIX")


def speaks_ascii(stream: TextIO | None) -> bool:
    """The one ASCII decision, for the one-shot commands and the screen: the C locale, or a stream that
    does not encode UTF-8."""
    return c_locale() or not is_utf8(stream)


def degrade(stream: TextIO | None) -> None:
    """Make a stream that cannot encode everything write ASCII twins instead of raising (an ASCII locale)."""
    if stream is not None and speaks_ascii(stream) and hasattr(stream, "reconfigure"):
        # in the C locale, UTF-8 mode made the stream UTF-8: it writes ASCII; another keeps its encoding
        stream.reconfigure(encoding="ascii" if is_utf8(stream) else None, errors=ascii_errors())


def to_ascii(stream: TextIO | None) -> None:
    """Make a stream write nothing but ASCII: each character outside it as its twin in `TO_ASCII`, or `?`."""
    if stream is not None and hasattr(stream, "reconfigure"):
        stream.reconfigure(encoding="ascii", errors=ascii_errors())


def for_terminal(ascii_only: bool, stream: TextIO | None = None) -> Glyphs:
    """The set to draw with: ASCII when asked, or when the terminal's stream does not encode UTF-8."""
    stream = sys.__stderr__ if stream is None else stream
    return ASCII if ascii_only or speaks_ascii(stream) else UNICODE
