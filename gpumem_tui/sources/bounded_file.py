"""A file the user names, read whole but bounded: the one rule for every input file (a startup log, a saved
/metrics payload, a secret, a CA bundle). A directory, a device (/dev/zero) or a socket is refused before a
byte is read; a FIFO opens at once (never waiting for a writer) and, where pipes are taken, is read to the
limit like a file (`kubectl logs POD | gpumem-tui log /dev/stdin`)."""

from __future__ import annotations

import os
import stat

from gpumem_tui.units import fmt_auto


class BoundedFileError(ValueError):
    """A file that cannot be read or is too large, in one line without its path (the caller names it)."""

    def __init__(self, reason: str, too_large: bool = False, pipe: bool = False) -> None:
        super().__init__(reason)
        self.too_large = too_large
        self.pipe = pipe
        """What was read is a pipe: it cannot be read again, so no advice may name it as a file."""

    def said(self, path: str, larger: str) -> str:
        """The one line a command prints: `PATH: over 8 MiB, LARGER` or `cannot read PATH: Permission denied`."""
        return f"{path}: {self}, {larger}" if self.too_large else f"cannot read {path}: {self}"


def read_bounded(path: str, max_bytes: int, pipes: bool = False) -> bytes:
    """What `path` holds, `max_bytes` at most (a BoundedFileError beyond: `over 64 MiB`). `pipes`: a FIFO is
    read too (a pipe given as /dev/stdin); otherwise only a regular file is."""
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
    with os.fdopen(fd, "rb") as handle:
        try:
            raw = handle.read(max_bytes + 1)
        except OSError as exc:
            raise BoundedFileError(exc.strerror or type(exc).__name__) from None
    if len(raw) > max_bytes:
        raise BoundedFileError(f"over {fmt_auto(max_bytes, digits=0)}", too_large=True, pipe=stat.S_ISFIFO(mode))
    return raw
