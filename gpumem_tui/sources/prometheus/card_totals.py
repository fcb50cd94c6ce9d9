"""The cards' totals (the `card_totals` slow fact) and the free memory under which the overview counts a GPU
as low: a constant per card, the `look` share of its largest total, compared on the server (`node_low`)."""

from __future__ import annotations

import math

from gpumem_tui.sources.prometheus.client import Result


def card_totals(answer: Result) -> dict[str, tuple[float, float]]:
    """Card model -> (the largest, the smallest) total MiB of one of its GPUs, from `card_totals`."""
    found: dict[str, list[float]] = {}
    for s in answer.series:
        try:
            total = float(s.labels.get("total", "nan"))
        except ValueError:
            continue
        if s.labels.get("modelName") and math.isfinite(total):
            found.setdefault(s.labels["modelName"], []).append(total)
    return {card: (max(totals), min(totals)) for card, totals in found.items()}


def low_bounds(answer: Result, look: float) -> dict[str, float]:
    """Card model -> the free MiB under which a GPU of the card's largest total is low (a node whose GPUs of
    the card have a smaller total, such as an exporter without FB_RESERVED, is read one by one where low)."""
    return {card: look * big for card, (big, _) in card_totals(answer).items() if big > 0}
