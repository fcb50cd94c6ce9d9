"""The cyclic garbage collector paused while a fleet answer is parsed and built into records.

Reading 1,000 nodes makes about 10^5 dicts, lists and strings in a few milliseconds; CPython runs its cyclic
collector every 700 new containers and, every so often, over the whole heap (the app's modules, Textual's
widgets), which more than doubled a refresh's CPU (bench/fleet.py). None of what a read makes is cyclic:
reference counting frees it all, so the collector has nothing to find there. It runs again as usual after."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic collection inside the block (synchronous code only: never across an `await`). Nests, and is
    safe across threads: whoever found the collector on turns it back on."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
