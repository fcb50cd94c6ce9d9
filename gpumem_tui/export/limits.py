"""The bounds of the exporter's listener (listener.py), apart: `gpumem-tui export`'s options take their defaults
from here, and parsing a command line loads no HTTP server. docs/design/exporter.md says why these bounds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    connections: int = 64
    """Connections served at once (a thread and a descriptor each); more wait in the listen queue."""
    backlog: int = 1024
    """The listen queue (the kernel caps it at net.core.somaxconn)."""
    request_s: float = 5.0
    """To send the request line and headers; also the longest wait on one read or write."""
    answer_s: float = 30.0
    """To be answered in all, from the connection's start (a client that reads the answer slowly)."""
    poll_s: float = 0.25
    """How often connections past their time are closed."""
    grace_s: float = 1.0
    """At the cap, a connection still sending its request after this long is closed for a new one."""
