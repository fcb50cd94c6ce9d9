"""A real Alertmanager (Debian's `prometheus-alertmanager`) on a free loopback port, with no cluster port,
sending every alert on its own to a webhook; and the webhook: a loopback HTTP server that keeps what it is
sent."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from tests.loopback import serving
from tests.sources.prometheus.server import ALERTMANAGER, free_port


class Received:
    """The webhook's notifications, as Alertmanager sent them (parsed JSON), in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: list[dict] = []

    def alerts(self) -> list[dict]:
        """Every alert of every notification so far, each with the `receiver` its notification went to."""
        with self.lock:
            return [{**alert, "receiver": body["receiver"]} for body in self.bodies for alert in body["alerts"]]


@contextmanager
def webhook() -> Iterator[tuple[str, Received]]:
    """The receiver's URL and what it received."""
    received = Received()

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with received.lock:
                received.bodies.append(body)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    with serving(Hook) as url:
        yield f"{url}/", received


def _doc_routes() -> str:
    """The `routes:` of docs/deploy.md's routing example, as written there (comments included), so the test
    routes exactly as the docs tell people to."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text(encoding="utf-8")
    block = text.split("```yaml\nroute:\n  receiver: gpu-oncall\n", 1)[1].split("```", 1)[0]
    return block[block.index("  routes:\n") :]


ROUTES = _doc_routes()
"""docs/deploy.md's routing example: critical alerts page the GPU on-call and go on to the team whose namespace
the alert names; the rest go to the root's receiver."""
RECEIVERS = ("gpu-oncall", "gpu-pager", "serving-team")


def config(folder: Path, hook: str) -> Path:
    """ROUTES under a root whose groups hold one alert each (`...`), sent at once and again as soon as they
    change, resolved ones too; every receiver posts to `hook` (the notification names its receiver)."""
    path = folder / "alertmanager.yml"
    receivers = "".join(
        f"  - name: {name}\n    webhook_configs: [{{url: '{hook}', send_resolved: true}}]\n" for name in RECEIVERS
    )
    path.write_text(
        "route:\n"
        "  receiver: gpu-oncall\n"
        "  group_by: ['...']\n"
        "  group_wait: 0s\n"
        "  group_interval: 1s\n"
        "  repeat_interval: 1h\n"
        f"{ROUTES}"
        f"receivers:\n{receivers}",
        encoding="utf-8",
    )
    return path


@contextmanager
def running(folder: Path, hook: str) -> Iterator[str]:
    """Alertmanager sending to `hook`; yields its `host:port` and stops it (SIGTERM) after."""
    port = free_port()
    command = [
        ALERTMANAGER,
        f"--config.file={config(folder, hook)}",
        f"--storage.path={folder / 'alertmanager'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
        "--log.level=warn",
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert server.poll() is None, f"alertmanager exited: {server.stderr.read().decode()[-500:]}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, "alertmanager was not ready within 20 s"
                time.sleep(0.02)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)
