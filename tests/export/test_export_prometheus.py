"""A real Prometheus scrapes `gpumem-tui export` (marked `prometheus`; skipped with the reason where the
binary is missing): the series arrive through its own parser and storage with their labels intact, a
hostile process name among them."""

from __future__ import annotations

import json
import shutil
import time
import urllib.parse
import urllib.request

import pytest

from tests.export.exporter import HOSTILE, exporter, hostile_scenario, scrape, value
from tests.sources.prometheus.server import running, scrape_config

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(
        shutil.which("prometheus") is None, reason="prometheus is not on PATH (Debian: apt-get install prometheus)"
    ),
]


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
        with running(tmp_path / "data", config=scrape_config(tmp_path, [target])) as base:
            deadline = time.monotonic() + 60
            used: list[dict] = []
            while not used:
                assert time.monotonic() < deadline, "Prometheus stored no gpumem series in 60 s"
                time.sleep(0.2)
                used = _query(base, "gpumem_gpu_memory_used_bytes")
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
