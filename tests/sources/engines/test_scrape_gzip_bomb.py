"""`metrics URL` against an engine whose /metrics is a gzip bomb: 64 KiB on the wire that inflate to 64 MiB.
The scraper inflates while it reads and stops at its 8 MiB cap: one line, exit 3, and the bytes held stay near
the cap (tracemalloc: bytes, not the machine's speed)."""

from __future__ import annotations

import gzip
import tracemalloc
from http.server import BaseHTTPRequestHandler

from gpumem_tui.cli import main
from gpumem_tui.sources.engines.parse import MAX_BYTES
from tests.loopback import serving

BOMB = gzip.compress(b" " * 8 * MAX_BYTES, compresslevel=9)


class _Bomb(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = BOMB if self.path == "/metrics" else b'{"data": []}'
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        if self.path == "/metrics":
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's signature
        """Quiet."""


def test_a_gzip_bomb_is_refused_at_the_cap_while_it_inflates(capsys):
    assert len(BOMB) < MAX_BYTES // 64  # small on the wire: a declared length cannot refuse it
    with serving(_Bomb) as url:
        tracemalloc.start()
        try:
            code = main(["metrics", url])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    captured = capsys.readouterr()
    assert code == 3 and captured.out == ""
    assert captured.err.count("\n") == 1 and "limit" in captured.err, captured.err
    assert peak < 3 * MAX_BYTES, f"{peak:,} bytes held"  # the whole 64 MiB was inflated before
