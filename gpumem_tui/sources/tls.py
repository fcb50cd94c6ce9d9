"""The TLS context of clients that trust the system's certificates, made when the first TLS connection needs
it. Loading the system's certificates costs about 30 ms of CPU, which a process whose engines all answer on
plain HTTP (the demo's, most engines' /metrics) never needs: `check` from cron pays it on every run."""

from __future__ import annotations

import ssl
import threading
from typing import Any


class OnFirstHandshake(ssl.SSLContext):
    """Stands for `ssl.create_default_context()`, made on the first TLS connection; httpx takes it as its
    `verify`. What a connection asks of it (ALPN, wrapping the socket) is passed to that context; anyio runs
    the wrapping, and so the loading, on a worker thread, off the event loop."""

    _made: ssl.SSLContext | None
    _making: threading.Lock

    def __new__(cls) -> OnFirstHandshake:
        context = super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)
        context._made = None
        context._making = threading.Lock()
        return context

    def made(self) -> ssl.SSLContext:
        with self._making:
            if self._made is None:
                self._made = ssl.create_default_context()
            return self._made

    def set_alpn_protocols(self, alpn_protocols: Any) -> None:
        self.made().set_alpn_protocols(alpn_protocols)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        return self.made().wrap_bio(*args, **kwargs)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        return self.made().wrap_socket(*args, **kwargs)
