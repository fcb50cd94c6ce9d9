"""The system's certificates are loaded once a process: each load costs about 0.1 s of CPU, and the scraper
asks for them before its first poll and again when it builds each client."""

from __future__ import annotations

from gpumem_tui.sources.http import tls


def test_tls_with_and_without_the_default_file_is_one_context() -> None:
    assert tls() is tls(None) is tls(ca_file=None)
