"""The validated catalog kept between processes: `check` from cron and `plan` in CI read the same TOML
files every time, and parsing and validating them is most of what loading costs.

A cache file holds the validated records, pickled, in `$XDG_CACHE_HOME/gpumem-tui` (else
`~/.cache/gpumem-tui`). Its name is the key: a hash of the files' text and of all that decides what
validating them gives (this package's version and validating code, pydantic's and Python's versions), so
another key's file is never read. It is written atomically, read only when this user alone may write it,
and any failure to read or write it falls back to validating the files: never stale, never a failed
command. docs/design/node.md says more."""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import platform
import sys
import time
from pathlib import Path
from typing import Any

PREFIX = "catalog-"
SUFFIX = ".pickle"
STALE_S = 7 * 86_400
"""Another key's file not written for a week is removed when a new one is written (a catalog edited, an
upgrade): cache files do not pile up."""
_CODE = ("gpumem_tui.catalog.loader", "gpumem_tui.catalog.schema", "gpumem_tui.records", "gpumem_tui.units")
"""The modules whose code decides what a validated entry holds: the loader and the records' classes."""


def cache_dir() -> Path | None:
    """Where cache files are kept; None when there is no home to keep them in."""
    base = os.environ.get("XDG_CACHE_HOME")
    try:
        return Path(base) / "gpumem-tui" if base else Path.home() / ".cache" / "gpumem-tui"
    except RuntimeError:  # no home directory known
        return None


def key(texts: list[str]) -> str | None:
    """The cache key of the catalog files' text in order; None when the code cannot be read to key it."""
    import pydantic

    from gpumem_tui import __version__

    digest = hashlib.sha256()
    for part in (__version__, pydantic.VERSION, platform.python_version()):
        digest.update(part.encode() + b"\0")
    try:
        for name in _CODE:
            digest.update(Path(sys.modules[name].__file__ or "").read_bytes() + b"\0")
    except (OSError, KeyError):
        return None
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:32]


def read(key: str) -> Any | None:
    """The tables cached under `key`, or None: no such file, or one that is not this user's alone, or cannot
    be read back."""
    directory = cache_dir()
    if directory is None:
        return None
    try:
        with open(directory / f"{PREFIX}{key}{SUFFIX}", "rb") as handle:
            status = os.fstat(handle.fileno())
            if status.st_uid != os.geteuid() or status.st_mode & 0o022:
                return None
            return pickle.load(handle)
    except Exception:  # noqa: BLE001 - missing, unreadable, corrupt or from other code: validate instead
        return None


def write(key: str, tables: Any) -> None:
    """Keep `tables` under `key`, and remove other keys' files not written for STALE_S (another install's
    are kept, not fought over); any failure leaves the cache as it was."""
    directory = cache_dir()
    if directory is None:
        return
    import tempfile  # with shutil, lzma and bz2: only a write pays for them

    written = None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".catalog-", delete=False) as handle:
            written = handle.name
            pickle.dump(tables, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(written, directory / f"{PREFIX}{key}{SUFFIX}")
    except Exception:  # noqa: BLE001 - a read-only or full disk, an unpicklable record: no cache, no failure
        _remove(written)
        return
    week_ago = time.time() - STALE_S
    for other in directory.glob(f"{PREFIX}*{SUFFIX}"):
        with contextlib.suppress(OSError):  # another process may have removed it first
            if other.name != f"{PREFIX}{key}{SUFFIX}" and other.stat().st_mtime < week_ago:
                _remove(str(other))


def _remove(path: str | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)
