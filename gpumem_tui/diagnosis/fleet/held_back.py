"""What the fleet says of data the server holds back (sources/prometheus/held_back.py measures it): the newest
samples a server hides from instant queries (VictoriaMetrics' `-search.latencyOffset`, 30 s by default) make
every node's data that much older than its age as the server counts it, and hide a node that began reporting
since. Said beside the data age, never as a stale or absent node."""

from __future__ import annotations

SAID_FROM_S = 1.0
"""A hold-back under this is the server's rounding of the time asked, not a setting."""


def data_age(age_s: float | None, held_back_s: float) -> str:
    """The header's data age: the newest data's age as the server counts it, plus what it holds back."""
    if held_back_s < SAID_FROM_S:
        return "unknown" if age_s is None else f"{age_s:.0f} s"
    held = f"{held_back_s:.0f} s"
    why = f"the server answers as of {held} ago (VictoriaMetrics' -search.latencyOffset)"
    if age_s is None:
        return f"unknown: {why}, so a node that began reporting since is not shown yet"
    return f"{age_s + held_back_s:.0f} s, {held} of it held back: {why}"
