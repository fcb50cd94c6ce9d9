"""What the code under test reads from disk, seen through Python's audit hooks (`open`, `os.scandir`,
`os.listdir`): nothing is patched, the reads happen and are only written down."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

READS = {"open", "os.scandir", "os.listdir"}
_watching: list[list[tuple[str, str]]] = []
_lock = threading.Lock()


def _hook(event: str, args: tuple) -> None:
    if event in READS and _watching:
        with _lock:
            for seen in _watching:
                seen.append((event, str(args[0]) if args else ""))


sys.addaudithook(_hook)  # once per process; it writes down only while a `disk_reads` block is open


@contextlib.contextmanager
def disk_reads() -> Iterator[list[tuple[str, str]]]:
    """Every (event, path) read while the block runs, in any thread."""
    seen: list[tuple[str, str]] = []
    _watching.append(seen)
    try:
        yield seen
    finally:
        _watching.remove(seen)


@contextlib.contextmanager
def listings(folder: Path) -> Iterator[list[str]]:
    """How often `folder` itself was listed while the block runs."""
    listed: list[str] = []
    with disk_reads() as seen:
        yield listed
        listed += [path for event, path in seen if event != "open" and Path(path) == folder]
