"""The fleet's history as text lines: one sparkline per fleet-wide series, its newest value and its range.
Pure (no Textual): the fleet screen and `fleet snapshot --history` print the same lines."""

from __future__ import annotations

from gpumem_tui.glyphs import UNICODE, Glyphs
from gpumem_tui.sources.prometheus.history import FleetHistory, span_words
from gpumem_tui.text import literal
from gpumem_tui.units import TIB, fmt_auto

WIDTH = 40
"""Cells of a sparkline: each the highest point of its share of the span, so a peak is never averaged away."""


def cells(points: list[float | None], width: int = WIDTH) -> list[float | None]:
    """`points` in `width` cells (fewer when there are fewer points): the highest known point of each."""
    count = min(width, len(points))
    out: list[float | None] = []
    for i in range(count):
        share = [p for p in points[i * len(points) // count : (i + 1) * len(points) // count] if p is not None]
        out.append(max(share) if share else None)
    return out


def sparkline(points: list[float | None], ceiling: float, glyphs: Glyphs = UNICODE) -> str:
    """Heights 0-8 of `ceiling`; a step with no number is a blank, never a zero."""
    line = []
    for value in cells(points):
        if value is None:
            line.append(" ")
            continue
        level = round(value / ceiling * 8) if ceiling > 0 else 0
        line.append(glyphs.levels[max(1 if value > 0 else 0, min(8, level))])
    return "".join(line)


def _known(points: list[float | None]) -> list[float]:
    return [p for p in points if p is not None]


def history_lines(history: FleetHistory, glyphs: Glyphs = UNICODE) -> list[str]:
    """The title line, then one line per series (or why it is unknown)."""
    s = history.series
    lines = [
        f"Last {span_words(history.span_s)}, a point every {span_words(history.step_s)} "
        "(GPU memory: dcgm-exporter's GPUs):"
    ]
    used = s.get("used_bytes")
    if used is not None:
        free = s.get("free_bytes") or [None] * len(used)
        reserved = s.get("reserved_bytes") or [0.0] * len(used)
        totals = [
            u + f + (r or 0.0) if u is not None and f is not None else None
            for u, f, r in zip(used, free, reserved, strict=True)
        ]
        ceiling = max(_known(totals), default=0.0)
        known = _known(used)
        of = f" of {_size(ceiling)}" if ceiling else ""
        said = f"now {_now(used[-1])}{of}, highest {_size(max(known))}" if known else _none(history, "used_bytes")
        lines.append(f"  GPU memory used      {sparkline(used, ceiling, glyphs)}  {said}")
    for name, title, scale in (
        ("kv_usage_max", "KV cache, fullest   ", None),
        ("waiting", "Requests waiting    ", "count"),
        ("preemptions_per_min", "Preemptions a minute", "rate"),
    ):
        points = s.get(name)
        if points is None:
            continue
        known = _known(points)
        top = max(known, default=0.0)
        if scale is None:
            line = sparkline(points, 1.0, glyphs)
            said = f"now {_percent(points[-1])}, highest {_percent(top)}" if known else _none(history, name)
        else:
            line = sparkline(points, top, glyphs)
            said = f"now {_number(points[-1])}, highest {_number(top)}" if known else _none(history, name)
        lines.append(f"  {title} {line}  {said}")
    for name, why in history.unknown.items():
        lines.append(f"  {name.replace('_', ' ')}: unknown, because {literal(why)}")
    return lines


def _none(history: FleetHistory, name: str) -> str:
    """A series with no number over the span, and why when a reading was NaN (within the 120 columns)."""
    why = history.gaps.get(name)
    return f"unknown, because {literal(why)}" if why else "no number over the span"


def _now(value: float | None) -> str:
    return "unknown" if value is None else _size(value)


def _size(n_bytes: float) -> str:
    """A fleet's memory in binary units: TiB from 1 TiB, to two decimals (10 GiB), so that a thousand nodes'
    (hundreds of TiB) fits the screen's 120 columns, where in GiB it did not; GiB below, to one."""
    return fmt_auto(n_bytes, digits=2) if n_bytes >= TIB else fmt_auto(n_bytes)


def _percent(value: float | None) -> str:
    return "unknown" if value is None else f"{value * 100:.0f} %"


def _number(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.1f}".removesuffix(".0")
