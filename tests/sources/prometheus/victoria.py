"""A real single-node VictoriaMetrics for the tests (Debian's `victoria-metrics`, which also ships `vmalert`):
on a free loopback port, over a fresh data folder, scraping what a Prometheus-style config says, and able to
take a fleet's OpenMetrics text as Prometheus's backfill takes it. Without the binaries the tests skip with the
reason, unless GPUMEM_REQUIRE_PROMETHEUS=1 (CI): then a missing binary fails."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.sources.prometheus.server import free_port, require


def require_victoria_metrics() -> None:
    require(("victoria-metrics", "vmalert"), "victoria-metrics")


@contextmanager
def victoria(data: Path, config: Path | None = None, latency_offset: str | None = "1s") -> Iterator[str]:
    """VictoriaMetrics over `data` on a free loopback port, scraping what `config` says; `latency_offset`:
    its `-search.latencyOffset` (None: its default, 30 s). Yields its URL and stops it (SIGTERM) after."""
    port = free_port()
    command = [
        "victoria-metrics",
        f"-httpListenAddr=127.0.0.1:{port}",
        f"-storageDataPath={data}",
        "-retentionPeriod=100y",  # the test fleet is dated 2026-01-01
        "-search.disableCache",  # a backfill after a query must be seen by the next query
        "-loggerLevel=ERROR",
    ]
    if config is not None:
        command += [f"-promscrape.config={config}", "-promscrape.config.strictParse=false"]
    if latency_offset is not None:
        command.append(f"-search.latencyOffset={latency_offset}")
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, server)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


def backfill(url: str, openmetrics: str) -> None:
    """Import an OpenMetrics text with time stamps in seconds (Prometheus's backfill input) through the import
    API, which takes Prometheus's text format with milliseconds; searchable once it returns."""
    lines = []
    for line in openmetrics.splitlines():
        if line and not line.startswith("#"):
            sample, stamp = line.rsplit(" ", 1)
            lines.append(f"{sample} {round(float(stamp) * 1000)}\n")
    request = urllib.request.Request(f"{url}/api/v1/import/prometheus", data="".join(lines).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=60):
        pass
    with urllib.request.urlopen(f"{url}/internal/force_flush", timeout=60):
        pass


def _wait_ready(url: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"victoria-metrics exited {server.returncode}: {server.stderr.read().decode()[-500:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1):
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError("victoria-metrics was not ready within 20 s")
