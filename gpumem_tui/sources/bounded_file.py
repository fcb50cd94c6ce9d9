"""A file the user names, read whole but bounded: the one rule for every input file (a startup log, a saved
/metrics payload, a secret, a CA bundle). A directory, a device (/dev/zero) or a socket is refused before a
byte is read; a FIFO opens at once (never waiting for a writer) and, where pipes are taken, is read to the
limit like a file (`kubectl logs POD | gpumem-tui log /dev/stdin`), or (`read_ends`, a log) through, its two
ends kept."""

from __future__ import annotations

import os
import stat
from collections import deque
from typing import BinaryIO

from gpumem_tui.units import fmt_auto


class BoundedFileError(ValueError):
    """A file that cannot be read or is too large, in one line without its path (the caller names it)."""

    def __init__(self, reason: str, too_large: bool = False) -> None:
        super().__init__(reason)
        self.too_large = too_large

    def said(self, path: str, larger: str) -> str:
        """The one line a command prints: `PATH: over 8 MiB, LARGER` or `cannot read PATH: Permission denied`."""
        return f"{path}: {self}, {larger}" if self.too_large else f"cannot read {path}: {self}"


def read_bounded(path: str, max_bytes: int, pipes: bool = False) -> bytes:
    """What `path` holds, `max_bytes` at most (a BoundedFileError beyond: `over 64 MiB`). `pipes`: a FIFO is
    read too (a pipe given as /dev/stdin); otherwise only a regular file is."""
    fd, _ = _opened(path, pipes)
    with os.fdopen(fd, "rb") as handle:
        raw = _read(handle, max_bytes + 1)
    if len(raw) > max_bytes:
        raise BoundedFileError(f"over {fmt_auto(max_bytes, digits=0)}", too_large=True)
    return raw


def read_ends(path: str, head_bytes: int, tail_bytes: int) -> tuple[bytes, bytes, int]:
    """A file or a pipe read to its end in bounded memory: its first `head_bytes`, its last `tail_bytes` after
    them, and how many bytes between the two were passed over (0: `head + tail` is all of it). A long-running
    server's log holds its start-up at its start and what stopped it at its end."""
    fd, mode = _opened(path, pipes=True)
    with os.fdopen(fd, "rb") as handle:
        head = _read(handle, head_bytes)
        if len(head) < head_bytes:
            return head, b"", 0
        if stat.S_ISREG(mode):  # a file: straight to its end
            start = max(head_bytes, os.fstat(handle.fileno()).st_size - tail_bytes)
            handle.seek(start)
            return head, _read(handle, tail_bytes), start - head_bytes
        kept: deque[bytes] = deque()  # a pipe: read through, the last tail_bytes kept
        held = passed = 0
        while chunk := _read(handle, PIECE):
            kept.append(chunk)
            held += len(chunk)
            while held - len(kept[0]) >= tail_bytes:
                held -= len(kept[0])
                passed += len(kept.popleft())
    tail = b"".join(kept)
    cut = max(0, held - tail_bytes)
    return head, tail[cut:], passed + cut


PIECE = 2**20
"""How much of a pipe is read at a time while only its end is kept."""


def _opened(path: str, pipes: bool) -> tuple[int, int]:
    """`path` opened for reading (its descriptor and mode), or a BoundedFileError where it is not a regular file
    (or a FIFO, with `pipes`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)  # a FIFO opens at once
    except OSError as exc:
        raise BoundedFileError(exc.strerror or type(exc).__name__) from None
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISREG(mode) or (pipes and stat.S_ISFIFO(mode))):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(mode) else "a pipe" if stat.S_ISFIFO(mode) else "a device or a socket"
        raise BoundedFileError(f"not a regular file{' or a pipe' if pipes else ''} ({what})")
    # a pipe with a writer is read to its end, as `cat` reads it; a named pipe no writer has opened yet reads
    # as empty (opened without blocking, so a FIFO never hangs the command)
    os.set_blocking(fd, True)
    return fd, mode


def _read(handle: BinaryIO, size: int) -> bytes:
    """Up to `size` bytes (fewer only at the end), or a BoundedFileError."""
    try:
        return handle.read(size)
    except OSError as exc:
        raise BoundedFileError(exc.strerror or type(exc).__name__) from None
