"""The cyclic garbage collector paused while a fleet answer is parsed and built into records.

Reading 1,000 nodes makes about 10^5 dicts, lists and strings in a few milliseconds; CPython runs its cyclic
collector every 700 new containers and, every so often, over the whole heap (the app's modules, Textual's
widgets), which more than doubled a refresh's CPU (bench/fleet.py). None of what a read makes is cyclic:
reference counting frees it all, so the collector has nothing to find there. It runs again as usual after.

A pause only defers: the objects made in it are counted, and the first allocation after it collects the
young generation over them all. A process that reads a fleet refresh after refresh keeps 10^5 objects of
each sample until the next, so `roomy` lets the young generation grow larger before a collection."""

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
