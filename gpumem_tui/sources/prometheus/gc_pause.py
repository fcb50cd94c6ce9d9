"""The cyclic garbage collector paused while a fleet answer is parsed and built into records: a read makes
about 10^5 objects, none of them cyclic, and collecting over the whole heap meanwhile more than doubled a
refresh's CPU (bench/fleet.py). docs/design/fleet.md has the measurements."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic collection inside the block. Nests, and is safe across threads: whoever found the collector on
    turns it back on. Across an `await` only where the loop runs the block's own work (the fleet reader's, in a
    thread of its own): the process's other threads collect nothing meanwhile either."""
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


_imports_frozen = False


def freeze_imports() -> None:
    """What the process imported before its command ran lives as long as it: out of every later collection
    (`cli.program`). Marks the process as one whose long-lived objects are frozen (`freeze_living`)."""
    global _imports_frozen
    gc.freeze()
    _imports_frozen = True


def freeze_living() -> None:
    """Freeze what lives now, where the process froze its imports (`freeze_imports`); elsewhere (the app run
    from Python, as tests do) nothing."""
    if _imports_frozen:
        gc.freeze()
