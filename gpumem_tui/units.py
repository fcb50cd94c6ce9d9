"""Byte sizes: parse user text into int bytes, print bytes with their unit (GB = 10^9, GiB = 2^30)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12
KIB, MIB, GIB, TIB = 2**10, 2**20, 2**30, 2**40

Unit = Literal["GB", "GiB"]

_FACTORS = {
    "b": 1,
    "kb": KB,
    "mb": MB,
    "gb": GB,
    "tb": TB,
    "kib": KIB,
    "mib": MIB,
    "gib": GIB,
    "tib": TIB,
}
_SIZE = re.compile(r"^\s*([0-9][0-9_,]*(?:\.[0-9]+)?|\.[0-9]+)\s*([a-zA-Z]+)\s*$")


class SizeError(ValueError):
    """A size the user wrote that cannot be read."""


def parse_size(text: str) -> int:
    """Read `80GB`, `79.19GiB`, `81559MiB`, `141 GB` or `512B` as an int of bytes.

    A bare number is refused: GB and GiB differ by 7.4 %, so the unit must be said; so is a negative size,
    and a lower-case b after an upper-case prefix (`80Gb`, `80GIb`: bits as network speeds write them, 8
    times less). A unit all in lower case (`80gb`, `4gib`) is bytes, as most tools read it.
    """
    if str(text).strip().startswith("-"):
        raise SizeError(f"size {text!r} is negative; sizes are positive, like 80GB or 79.2GiB")
    match = _SIZE.match(str(text))
    if not match:
        raise SizeError(f"cannot read size {text!r}: write a number and a unit, like 80GB or 79.2GiB")
    number, unit = match.groups()
    if unit.endswith("b") and unit != unit.lower() and unit.lower() in _FACTORS:
        binary = unit.lower().endswith("ib")
        meant = f"{number}{unit[0].upper()}iB" if binary else f"{number}{unit[:-1].upper()}B"
        raise SizeError(f"size {text!r}: a lower-case b is bits; write bytes with a B, like {meant}")
    factor = _FACTORS.get(unit.lower())
    if factor is None:
        raise SizeError(f"unknown unit {unit!r} in {text!r}: use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB")
    value = float(number.replace(",", "").replace("_", ""))
    return round(value * factor)


def fmt(n_bytes: float | None, unit: Unit = "GB", digits: int = 1) -> str:
    """`141.2 GB` or `131.5 GiB`; a missing reading prints as `n/a`."""
    if n_bytes is None or (isinstance(n_bytes, float) and math.isnan(n_bytes)):
        return "n/a"
    value = n_bytes / (GB if unit == "GB" else GIB)
    return f"{value:,.{digits}f} {unit}"


def gib(n_bytes: float, digits: int = 2, unit: bool = True) -> str:
    """`12.34 GiB`: the unit the engine's own log, the findings and the plan's cross-check speak in (two
    decimals: small differences matter there). `unit=False` gives the number alone, for a sum that names
    its unit once at its end (`1.90 + 0.35 = 2.25 GiB`)."""
    text = f"{n_bytes / GIB:,.{digits}f}"
    return f"{text} GiB" if unit else text


SPOKEN: ContextVar[Unit] = ContextVar("spoken", default="GiB")
"""The unit findings are worded in: GiB (what engines' own logs print), unless `speaking` says otherwise (the
app words them in its screen's unit)."""


def said(n_bytes: float, digits: int = 2, unit: bool = True) -> str:
    """`12.34 GiB` or `13.25 GB`: a size in a finding's words, in the unit they are spoken in. `unit=False`
    gives the number alone, for `9.30 of 14.96 GiB` where the unit follows once."""
    text = fmt(n_bytes, SPOKEN.get(), digits)
    return text.rsplit(" ", 1)[0] if not unit else text


@contextmanager
def speaking(unit: Unit) -> Iterator[None]:
    """Findings made inside are worded in `unit`."""
    token = SPOKEN.set(unit)
    try:
        yield
    finally:
        SPOKEN.reset(token)


def fmt_both(n_bytes: float | None, digits: int = 1) -> str:
    """`85.5 GB (79.6 GiB)`: both units where a person decides on the number."""
    if n_bytes is None:
        return "n/a"
    return f"{fmt(n_bytes, 'GB', digits)} ({fmt(n_bytes, 'GiB', digits)})"


def fmt_auto(n_bytes: float | None, binary: bool = True, digits: int = 1) -> str:
    """Pick the largest unit that keeps the number >= 1: `512 MiB`, `2.3 GiB`, `640 KB`."""
    if n_bytes is None:
        return "n/a"
    steps = (
        [("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)]
        if binary
        else [("TB", TB), ("GB", GB), ("MB", MB), ("KB", KB)]
    )
    for name, factor in steps:
        if abs(n_bytes) >= factor:
            return f"{n_bytes / factor:,.{digits}f} {name}"
    return f"{int(n_bytes):,} B"


def parse_fraction(text: str) -> float:
    """Read `0.9` or `90%` as a fraction in [0, 1]."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise SizeError(f"cannot read fraction {text!r}: write 0.9 or 90%") from None
    if not 0 < value <= 1:
        raise SizeError(f"fraction {text!r} is outside (0, 1]")
    return value
