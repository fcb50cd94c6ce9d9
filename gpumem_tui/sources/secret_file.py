"""Secrets read from files (a bearer token, a password): a regular file, a few KiB at most, one line of
text. Nothing here ever repeats what a file holds: every error names the option and the file, then what is
wrong with it, so a secret never reaches a screen, an error line, a JSON answer or a crash file."""

from __future__ import annotations

import os
import stat

from gpumem_tui.sources.bounded_file import BoundedFileError, read_bounded

MAX_SECRET_BYTES = 64 * 2**10
"""The largest secret file read: a Kubernetes service account token is about 1 KiB, a JWT rarely 8 KiB."""


class SecretError(ValueError):
    """A secret file that cannot be used, in one line that names the option and the file, never its text."""


def read_secret(path: str, option: str, token: bool) -> str:
    """The secret in `path`, its surrounding whitespace cut (as Prometheus reads its own). `token`: a bearer
    token, printable ASCII without a space (RFC 6750); else a password, any text without control characters."""
    return _checked(read_file(path, option, MAX_SECRET_BYTES).strip(), f"{option} {path}", token)


def read_file(path: str, option: str, max_bytes: int) -> bytes:
    """What a regular file holds, `max_bytes` at most (a SecretError beyond). A FIFO, a device (/dev/zero) or
    a directory is refused before a byte is read: none of them is a file of credentials or certificates."""
    try:
        return read_bounded(path, max_bytes)
    except BoundedFileError as exc:
        larger = ", larger than such a file can be" if exc.too_large else ""
        raise SecretError(f"{option} {path}: {exc}{larger}") from None


def _checked(raw: bytes, where: str, token: bool) -> str:
    what = "token" if token else "password"
    if not raw:
        raise SecretError(f"{where}: the file holds no {what}")
    try:
        text = raw.decode("ascii" if token else "utf-8")
    except UnicodeDecodeError:
        raise SecretError(f"{where}: the {what} is not {'ASCII' if token else 'UTF-8'} text") from None
    if token and not all("!" <= ch <= "~" for ch in text):
        raise SecretError(f"{where}: the token holds a space, a line break or a control character")
    if not token and not text.isprintable():
        raise SecretError(f"{where}: the password holds a line break or a control character")
    return text


def exposed(path: str, option: str) -> str | None:
    """A warning when others than the file's owner may read it (as ssh warns of a private key); None when
    only the owner can, or when the file cannot be looked at (its read says why)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if not mode & 0o044:
        return None
    who = "anyone" if mode & 0o004 else "its group"
    return f"{option} {path} is readable by {who} (mode {stat.S_IMODE(mode):04o}); chmod 600 it"
