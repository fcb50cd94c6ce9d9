"""Outside text made safe to show: control characters become visible `\\xNN`, never terminal escapes."""

from __future__ import annotations


def literal(text: str | None, missing: str = "-") -> str:
    """Process names, command lines, model names and labels exactly as written, minus their power."""
    if text is None:
        return missing
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)
