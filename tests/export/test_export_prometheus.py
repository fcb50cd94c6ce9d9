"""A real Prometheus scrapes `gpumem-tui export` (marked `prometheus`; skipped with the reason where the
binary is missing): the series arrive through its own parser and storage with their labels intact, a
hostile process name among them."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from tests.export.exporter import HOSTILE, exporter, hostile_scenario, scrape, value

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(
        shutil.which("prometheus") is None, reason="prometheus is not on PATH (Debian: apt-get install prometheus)"
    ),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _query(base: str, promql: str) -> list[dict]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    with urllib.request.urlopen(url, timeout=10) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def test_a_real_prometheus_scrapes_the_exporter(tmp_path):
    with exporter("--demo", str(hostile_scenario(tmp_path)), "--at", "48") as url:
        ours = scrape(url)
        target = urllib.parse.urlsplit(url).netloc
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            f"  - job_name: gpumem\n    honor_labels: true\n    static_configs: [{{targets: ['{target}']}}]\n",
            encoding="utf-8",
        )
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            used: list[dict] = []
            while not used:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "Prometheus stored no gpumem series in 60 s"
                time.sleep(0.2)
                try:
                    used = _query(base, "gpumem_gpu_memory_used_bytes")
                except OSError:
                    continue  # not listening yet
            (stored,) = used
            assert float(stored["value"][1]) == value(ours, "gpumem_gpu_memory_used_bytes", gpu="0")
            assert stored["metric"]["Hostname"] == "gpu-node-04" and stored["metric"]["job"] == "gpumem"
            (up,) = _query(base, "up")
            assert up["value"][1] == "1"  # a scrape Prometheus accepted whole, the hostile name in it
            (notebook,) = _query(base, 'gpumem_process_memory_used_bytes{pid="3100"}')
            assert notebook["metric"]["process_name"] == HOSTILE
            findings = _query(base, "gpumem_finding_active == 1")
            assert {f["metric"]["code"] for f in findings} == {
                labels["code"] for labels, _ in ours["gpumem_finding_active"]
            }
            # the overlay: the plan's bands on the GPU, joined on the GPU's labels
            bands = _query(base, 'sum by (Hostname, gpu) (gpumem_plan_bytes{band!~"reserve|spare|driver_reserved"})')
            assert len(bands) == 1 and float(bands[0]["value"][1]) > 0
        finally:
            server.terminate()
            server.wait(timeout=30)
