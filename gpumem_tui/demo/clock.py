"""Clocks for the simulated node: one a test moves by hand, one that follows the wall clock at any speed."""

from __future__ import annotations

import time

from gpumem_tui.sources.pace import Pace


class ManualClock:
    """Simulated seconds since the scenario started; moves only when told to."""

    def __init__(self, start_s: float = 0.0):
        self._now = start_s

    def __call__(self) -> float:
        return self._now

    def set(self, seconds: float) -> None:
        if seconds < self._now:
            raise ValueError("the simulated clock only moves forward")
        self._now = seconds

    def advance(self, seconds: float) -> None:
        self.set(self._now + seconds)


class WallClock:
    """Simulated seconds that follow the monotonic clock, `speed` times as fast, from `start_s`;
    `pause()` holds them (the TUI's pause key)."""

    def __init__(self, speed: float = 1.0, start_s: float = 0.0):
        self._pace = Pace(time.monotonic)
        self._speed, self._start = speed, start_s
        self.pause, self.resume = self._pace.pause, self._pace.resume

    def __call__(self) -> float:
        return self._start + self._pace() * self._speed
