"""End to end on loopback (issue 30, section 1): three `gpumem-tui export --demo` nodes, the noisy neighbour, the
same on Kubernetes (the engine and the notebook each in a pod) and a healthy one, scraped every second by a real
Prometheus that loads `fleet rules --alerts --scrape-interval 1` (critical `for:` 2 s) and sends to a real
Alertmanager routed as docs/deploy.md says, which posts to a webhook here. The noisy neighbour's alert arrives
with its labels, the engine's model among them, and the words `check` says; on Kubernetes it names the engine's
namespace and pod and the notebook's own, and its `namespace` routes it to the serving team as well as the
pager; the healthy node (an info finding only) pages nothing, nor is ever pending; and the alert resolves when
the finding clears: the scenario's engine dies of the memory the notebook took (about 57 s in), so no engine
is left beside it, and its own alert follows. Marked `prometheus`: without the binaries it skips with the
reason, and fails in CI."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack

import pytest

from gpumem_tui.cli import main
from tests.deploy import alertmanager
from tests.export.exporter import ENGINE_POD, NOTEBOOK_POD, exporter, pods_scenario
from tests.sources.prometheus.server import free_port, require_alertmanager, running, scrape_config

pytestmark = pytest.mark.prometheus

NOISY, K8S, HEALTHY = "node-noisy", "node-k8s", "node-healthy"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
START_S = 48
"""The noisy neighbour's first moment: the notebook holds 20 GiB, GPU 0 nearly full (critical)."""


def _query(base: str, promql: str) -> list[dict]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)["data"]["result"]


def _wait(what: str, found: Callable[[], list[dict]], received: alertmanager.Received) -> dict:
    deadline = time.monotonic() + 90
    while not (seen := found()):
        assert time.monotonic() < deadline, f"{what} did not arrive in 90 s; received: {received.alerts()}"
        time.sleep(0.1)
    return seen[0]


def _alerts(
    received: alertmanager.Received, name: str, status: str, fingerprint: str | None = None, node: str = NOISY
) -> list[dict]:
    return [
        a
        for a in received.alerts()
        if a["labels"]["alertname"] == name
        and a["labels"].get("Hostname") == node
        and a["status"] == status
        and fingerprint in (None, a["fingerprint"])
    ]


def _said(capsys, code: str) -> dict:
    assert main(["check", "--demo", "noisy-neighbour", "--at", str(START_S), "--json"]) == 2
    (finding,) = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == code]
    return finding


def test_the_noisy_neighbour_pages_with_its_words_the_healthy_node_does_not(tmp_path, capsys):
    require_alertmanager()
    said = _said(capsys, "foreign_process")
    assert main(["fleet", "rules", "--alerts", "--scrape-interval", "1"]) == 0
    (tmp_path / "alerts.yml").write_text(capsys.readouterr().out, encoding="utf-8")
    ports = {NOISY: free_port(), K8S: free_port(), HEALTHY: free_port()}
    k8s = str(pods_scenario(tmp_path))
    with ExitStack() as stack:
        hook, received = stack.enter_context(alertmanager.webhook())
        manager = stack.enter_context(alertmanager.running(tmp_path, hook))
        more = (
            "rule_files: [alerts.yml]\n"
            f"alerting: {{alertmanagers: [{{static_configs: [{{targets: ['{manager}']}}]}}]}}\n"
        )
        config = scrape_config(tmp_path, [f"127.0.0.1:{port}" for port in ports.values()], more=more)
        base = stack.enter_context(running(tmp_path / "data", config=config))
        nodes = ((HEALTHY, "healthy-8b", "90"), (NOISY, "noisy-neighbour", str(START_S)), (K8S, k8s, str(START_S)))
        for node, scenario, at in nodes:
            listen = f"127.0.0.1:{ports[node]}"
            args = ("--demo", scenario, "--at", at, "--interval", "1", "--listen", listen)
            stack.enter_context(exporter(*args, env={"NODE_NAME": node}))
        fired = _wait(
            "the foreign process's alert", lambda: _alerts(received, "GpuMemForeignProcess", "firing"), received
        )
        resolved = _wait(
            "its resolution",
            lambda: _alerts(received, "GpuMemForeignProcess", "resolved", fired["fingerprint"]),
            received,
        )
        _wait("the engine's exit", lambda: _alerts(received, "GpuMemEngineExited", "firing"), received)
        routed = _wait(
            "the Kubernetes node's alert to the serving team",
            lambda: [
                a
                for a in _alerts(received, "GpuMemForeignProcess", "firing", node=K8S)
                if a["receiver"] == "serving-team"
            ],
            received,
        )
        healthy_findings = _query(base, f'gpumem_finding_active{{Hostname="{HEALTHY}"}}')
        healthy_alerts = _query(base, f'count_over_time(ALERTS{{Hostname="{HEALTHY}"}}[1h])')
    labels = fired["labels"]
    assert labels["severity"] == "critical" == said["severity"]
    assert (labels["code"], labels["gpu"], labels["pid"]) == ("foreign_process", "0", "3100")
    assert (labels["model_name"], labels["engine"]) == (MODEL, "0")  # the engine on the GPU: no pod on this node
    assert "namespace" not in labels and "endpoint" not in labels
    assert fired["receiver"] == "gpu-pager"
    assert labels["instance"] == f"127.0.0.1:{ports[NOISY]}" and labels["job"] == "gpumem"
    assert fired["annotations"]["summary"] == said["title"]  # the words `check` says, as they are
    assert fired["annotations"]["try"] == said["try_this"]
    assert resolved["labels"] == labels and resolved["endsAt"] > fired["startsAt"]
    assert {f["metric"]["severity"] for f in healthy_findings} == {"info"}  # scraped: its one finding is info
    assert healthy_alerts == []  # never pending, never firing
    assert not [a for a in received.alerts() if a["labels"].get("Hostname") == HEALTHY]
    on_k8s = routed["labels"]
    assert (on_k8s["namespace"], on_k8s["pod"], on_k8s["model_name"]) == (*ENGINE_POD, MODEL)
    assert (on_k8s["process_namespace"], on_k8s["process_pod"]) == NOTEBOOK_POD
    assert routed["annotations"]["summary"] == said["title"]  # the same moment of the same story
    both = {a["receiver"] for a in _alerts(received, "GpuMemForeignProcess", "firing", routed["fingerprint"], K8S)}
    assert both == {"gpu-pager", "serving-team"}  # critical: the pager, and on to the team its namespace names
