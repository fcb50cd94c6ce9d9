"""Outside text made safe to show: control characters become visible escapes, never terminal commands."""

from __future__ import annotations


def literal(value: object, missing: str = "-") -> str:
    """Process names, command lines, model names and labels exactly as written, minus their power:
    a newline prints as `\\n`, an escape byte as `\\x1b`; None prints as `missing`."""
    if value is None:
        return missing
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in str(value))


def _escape(ch: str) -> str:
    escaped = ch.encode("unicode_escape").decode("ascii")
    return escaped if escaped != ch else f"\\x{ord(ch):02x}"
