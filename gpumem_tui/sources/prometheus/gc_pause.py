"""The cyclic garbage collector paused while a fleet answer is parsed and built into records: at 1,000 nodes a
read makes about 10^5 containers, none cyclic, and the collector's passes over the whole heap more than
doubled a refresh's CPU (bench/fleet.py). It runs again as usual after; `roomy` lets its young generation
grow for a reader that keeps each sample until the next. Why: docs/design/queries.md."""

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


YOUNG = 50_000
"""Objects the young generation may hold before a collection, where a fleet is read refresh after refresh
(CPython's default, 700, collected about 20 times a refresh at 1,000 nodes, and its middle generation, the
sample kept between refreshes, about twice: 10-20 ms a refresh, bench/fleet.py). Garbage in cycles waits a
little longer to be freed: a few MB at most."""


def roomy() -> None:
    """Raise the young generation's threshold to YOUNG (never lower it); the older ones as they are."""
    young, middle, old = gc.get_threshold()
    if young < YOUNG:
        gc.set_threshold(YOUNG, middle, old)
