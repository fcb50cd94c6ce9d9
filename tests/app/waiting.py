"""Waiting in a pilot for a read over real HTTP: the app's first refresh starts on mount, which may come after
the pilot starts, and a loaded machine answers late, so "the workers are done" alone can be said too early."""

from __future__ import annotations

from collections.abc import Callable


async def until(pilot, done: Callable[[], bool], limit_s: float = 20.0) -> None:
    """Pause until `done()` (a read landed or failed), at most `limit_s`: far past a sound read's time."""
    for _ in range(int(limit_s / 0.05)):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if done():
            break
        await pilot.pause(0.05)
    await pilot.pause()
