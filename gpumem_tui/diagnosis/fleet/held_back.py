"""What the fleet says of data the server holds back (sources/prometheus/held_back.py measures it): the newest
samples a server hides from instant queries (VictoriaMetrics' `-search.latencyOffset`, 30 s by default) make
every node's data that much older than its age as the server counts it, and hide a node that began reporting
since. Said beside the data age, never as a stale or absent node."""

from __future__ import annotations

from gpumem_tui.sources.prometheus.held_back import answers_as_of


def data_age(age_s: float | None, held_back_s: float) -> str:
    """The header's data age: the newest data's age as the server counts it, plus what it holds back."""
    why = answers_as_of(held_back_s)
    if why is None:
        return "unknown" if age_s is None else f"{age_s:.0f} s"
    if age_s is None:
        return f"unknown: {why}, so a node that began reporting since is not shown yet"
    return f"{age_s + held_back_s:.0f} s, {held_back_s:.0f} s of it held back: {why}"
