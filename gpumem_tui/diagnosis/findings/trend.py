"""The recent memory trend of a GPU: a least-squares slope, and when it would fill the card."""

from __future__ import annotations

from gpumem_tui.diagnosis.history import Point


def slope_bytes_per_s(points: list[Point]) -> float | None:
    """Least-squares growth in bytes per second; None with fewer than two readings or no time between them."""
    if len(points) < 2:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_b = sum(b for _, b in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return None
    return sum((t - mean_t) * (b - mean_b) for t, b in points) / spread


def seconds_to_full(points: list[Point], free_bytes: int, min_slope: float) -> float | None:
    """How long until the free memory is gone at the fitted rate; None when memory is not growing."""
    return full_after(slope_bytes_per_s(points), free_bytes, min_slope)


def full_after(slope: float | None, free_bytes: int, min_slope: float) -> float | None:
    """`seconds_to_full` from a slope already fitted."""
    if slope is None or slope <= min_slope:
        return None
    return max(0.0, free_bytes / slope)
