"""Text from outside (model names, labels, log lines) made safe to print: control characters shown escaped."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def literal(value: object) -> str:
    """`None` as `-`; a newline or an escape byte inside a name prints as `\\n` / `\\x1b`, never acts."""
    if value is None:
        return "-"
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), str(value))
