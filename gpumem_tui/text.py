"""Outside text made safe to show: control characters become visible escapes, never terminal commands."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit


def literal(value: object, missing: str = "-") -> str:
    """Process names, command lines, model names and labels exactly as written, minus their power:
    a newline prints as `\\n`, an escape byte as `\\x1b`; None prints as `missing`."""
    if value is None:
        return missing
    text = str(value)
    if text.isprintable():  # nearly always: looked at in C, not a character at a time
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    escaped = ch.encode("unicode_escape").decode("ascii")
    return escaped if escaped != ch else f"\\x{ord(ch):02x}"


_BUS_ID = re.compile(r"([0-9A-Fa-f]{4}|[0-9A-Fa-f]{8}):([0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
"""domain:bus:device.function, the domain in 4 (lspci) or 8 (NVML) hex digits."""


def short_bus_id(bus_id: str | None) -> str | None:
    """A PCI bus id as lspci writes it: `00000000:18:00.0` -> `18:00.0` (domain 0 left out), else the
    domain in four digits (`0001:18:00.0`); anything else from the driver or a recording, literally."""
    if not bus_id:
        return None
    match = _BUS_ID.fullmatch(bus_id)
    if match is None:
        return literal(bus_id)
    domain, rest = match.groups()
    number = int(domain, 16)
    return rest if number == 0 else f"{number:04X}:{rest}"


def loopback(host: str) -> bool:
    """Whether a URL's host names this machine's loopback (`localhost`, 127.0.0.0/8, `::1`): the one rule for
    an engine address that means "this node"."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_port(url: str) -> tuple[str, int | None] | None:
    """A URL's host (empty where it names none) and port (None where it gives none); None for a URL that does
    not parse (a port out of range or not a number, a broken IPv6 address: urlsplit's ValueError)."""
    try:
        parts = urlsplit(url)
        return parts.hostname or "", parts.port
    except ValueError:
        return None


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://|//)?.*@", re.DOTALL)
"""A URL's scheme, then everything up to its last `@`: the userinfo, and more where a password holds an
unencoded `/`, `?` or `#` (such a URL is refused as input, yet never shown either)."""


_URL = re.compile(r'[A-Za-z][A-Za-z0-9+.-]*://[^\s"\\]+')
"""A URL inside text, up to white space, a quote or a backslash (so one inside a JSON string ends there)."""


def shown_urls(text: str) -> str:
    """Every URL in `text` as `shown_url` shows it: text written before that rule (an old recording) may hold one
    with a user and password."""
    if "@" not in text:  # nearly always: no regular expression run
        return text
    return _URL.sub(lambda found: shown_url(found.group()), text)


def shown_url(url: str) -> str:
    """A URL as it may be shown, recorded or exported: `http://user:password@host:9090` -> `http://host:9090`.
    The request may carry the credentials; no screen, error, file or label does. The one rule for every
    URL that leaves the process."""
    if "@" not in url:  # nearly always: no regular expression run
        return url
    return _USERINFO.sub(r"\1", url, count=1)
