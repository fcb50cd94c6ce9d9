"""A real Prometheus for the tests (reference recipe: `promtool tsdb create-blocks-from openmetrics`, then
`prometheus` on a free loopback port over the blocks, no scraping; or scraping the targets of a config).
Tests that need it are marked `prometheus` (VictoriaMetrics too: victoria.py); without the binaries they skip
with the reason, unless GPUMEM_REQUIRE_PROMETHEUS=1 (CI), which makes the missing binary a failure."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.rules import GROUP, selector_labels

T0 = 1767225600
"""2026-01-01T00:00:00Z, the demo clock's zero and a 2-hour block boundary: each fixture fits one block."""
SERVED = ("lock", "wal", "chunks_head", "queries.active")
"""What a server writes into its data folder beside the blocks: not copied with them."""


def require_prometheus() -> None:
    """Skip (or, in CI, fail) when `prometheus` or `promtool` is not on PATH."""
    require(("prometheus", "promtool"), "prometheus")


ALERTMANAGER = "prometheus-alertmanager"
"""Alertmanager's binary as Debian names it."""


def require_alertmanager() -> None:
    """As `require_prometheus`, for Alertmanager too (Debian's package `prometheus-alertmanager`)."""
    require(("prometheus", "promtool", ALERTMANAGER), "prometheus prometheus-alertmanager")


def require(binaries: tuple[str, ...], packages: str) -> None:
    """Skip (or, in CI, fail) when one of `binaries` is not on PATH; `packages`: what installs them."""
    missing = [name for name in binaries if shutil.which(name) is None]
    if not missing:
        return
    why = f"{' and '.join(missing)} not on PATH (Debian: apt-get install {packages})"
    if os.environ.get("GPUMEM_REQUIRE_PROMETHEUS") == "1":
        pytest.fail(f"GPUMEM_REQUIRE_PROMETHEUS=1 but {why}")
    pytest.skip(why)


def backfill(openmetrics: str, where: Path) -> Path:
    """The blocks of this OpenMetrics text, under `where/data`."""
    source = where / "fleet.om"
    source.write_text(openmetrics, encoding="utf-8")
    data = where / "data"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        check=True,
        capture_output=True,
    )
    return data


def backfill_rules(url: str, rules: Path, span: tuple[float, float], interval_s: int, output: Path) -> None:
    """The rule file `rules` evaluated against the server at `url` every `interval_s` over `span` (start, end),
    its series written as blocks into `output` (promtool offsets a group's evaluations by its file and name, as
    Prometheus does). Each rule is evaluated against that server only, never another rule's output of the run."""
    subprocess.run(
        [
            "promtool", "tsdb", "create-blocks-from", "rules", f"--url={url}", f"--start={int(span[0])}",
            f"--end={int(span[1])}", f"--eval-interval={interval_s}s", f"--output-dir={output}", str(rules),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip


def changes_group(queries: Queries, interval_s: int) -> str:
    """The rule group of `gpumem-tui fleet rules` with its change record alone (NODE_CHANGED), which reads the
    recorded figures: a second `backfill_rules` of the same file, against a server that holds them."""
    from gpumem_tui.sources.prometheus.queries import NODE_CHANGED
    from gpumem_tui.sources.prometheus.rule_files import rule_file

    expr = queries.recording_rules(selector_labels(queries.matchers), interval_s)[NODE_CHANGED]
    return rule_file([{"name": GROUP, "interval": f"{interval_s}s", "rules": [{"record": NODE_CHANGED, "expr": expr}]}])


def free_port() -> int:
    """A free loopback port for a server named before it binds it: drawn below the kernel's ephemeral range, so
    no outgoing connection's local port (a scrape of a target not up yet, on a busy machine) takes it meanwhile."""
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    low = int(ephemeral.read_text().split()[0]) if ephemeral.exists() else 32768
    for port in random.sample(range(10000, max(low, 10001)), 100):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # all taken: any the kernel gives
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_config(folder: Path, targets: list[str], job: str = "gpumem", more: str = "") -> Path:
    """A Prometheus config that scrapes `targets` (`host:port`) every second with `honor_labels`, as
    docs/export.md says to scrape `gpumem-tui export`; `more`: further top-level sections (rule files)."""
    config = folder / "prometheus.yml"
    listed = ", ".join(f"'{target}'" for target in targets)
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: {job}\n    honor_labels: true\n    static_configs: [{{targets: [{listed}]}}]\n" + more,
        encoding="utf-8",
    )
    return config


@contextmanager
def running(
    data: Path, web_config: Path | None = None, config: Path | None = None, flags: tuple[str, ...] = ()
) -> Iterator[str]:
    """Prometheus over `data` on a free loopback port, scraping what `config` says (nothing without one), with
    any further command-line `flags`; yields its URL and stops it (SIGTERM) after."""
    port = free_port()
    command = [
        "prometheus",
        f"--config.file={config or '/dev/null'}",
        f"--storage.tsdb.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--storage.tsdb.retention.time=100y",
        "--log.level=warn",
        *flags,
    ]
    if web_config is not None:
        command.append(f"--web.config.file={web_config}")
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, server, web_config is not None)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=60)  # a server over 10,000 nodes (bench/fleet.py) takes over 10 s


def _wait_ready(url: str, server: subprocess.Popen, auth: bool) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"prometheus exited {server.returncode}: {server.stderr.read().decode()[-500:]}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1):
                return
        except urllib.error.HTTPError as exc:
            if auth and exc.code == 401:
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError("prometheus was not ready within 20 s")
