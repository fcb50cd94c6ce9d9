"""A monotonic clock that can be held: demos and replays stand still while the screen is paused."""

from __future__ import annotations

import time
from collections.abc import Callable


class Pace:
    """Seconds elapsed since creation, not counting the time spent paused."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._origin = clock()
        self._held_at: float | None = None

    def __call__(self) -> float:
        now = self._held_at if self._held_at is not None else self._clock()
        return now - self._origin

    def pause(self) -> None:
        if self._held_at is None:
            self._held_at = self._clock()

    def resume(self) -> None:
        if self._held_at is not None:
            self._origin += self._clock() - self._held_at
            self._held_at = None
