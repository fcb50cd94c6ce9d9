"""One real Prometheus for the deploy tests: it scrapes three `gpumem-tui export --demo` processes through the
scrape job of SCRAPE_CONFIG (its Kubernetes discovery swapped for a file that gives each exporter the
`__meta_kubernetes_*` labels a pod would have, so the job's own relabeling runs), and a loopback target
serving what dcgm-exporter and vLLM would for one of those nodes (demo/fleet_series.py at one moment). Every
second, so the test waits a few seconds, not minutes; stopped once the last deploy test has run."""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import yaml

from gpumem_tui.demo.fleet_series import FleetNodeSpec, series_rows
from tests.export.exporter import exporter
from tests.loopback import serving
from tests.sources.prometheus.server import require_prometheus, running

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SCRAPE_CONFIG = DEPLOY / "kubernetes" / "without-operator" / "prometheus-scrape.yaml"
NODES = {"node-1": ("busy-node",), "node-2": ("k8s-two-pods",), "node-3": ("noisy-neighbour", "--at", "48")}
"""NODE_NAME of each exporter -> its demo: 8 GPUs and 4 engines with findings; engines in pods (their
namespaces); a notebook beside an engine (a process that is not an engine), 6 s after it started."""
SIMULATED = (FleetNodeSpec("node-1", "busy-node", "pod", "Hostname"),)
"""dcgm-exporter and vLLM of node-1, as the simulated fleet writes them (its first node: the demo's GPU UUIDs)."""


def require_binary(name: str, package: str) -> None:
    """Skip without `name` on PATH, or fail where GPUMEM_REQUIRE_PROMETHEUS=1 (CI), as require_prometheus does."""
    if shutil.which(name) is not None:
        return
    why = f"{name} not on PATH (Debian: apt-get install {package})"
    if os.environ.get("GPUMEM_REQUIRE_PROMETHEUS") == "1":
        pytest.fail(f"GPUMEM_REQUIRE_PROMETHEUS=1 but {why}")
    pytest.skip(why)


def pod_meta(node: str, component: str = "exporter") -> dict[str, str]:
    """The labels Prometheus's Kubernetes discovery (role: pod) gives the container port of a DaemonSet pod."""
    return {
        "__meta_kubernetes_namespace": "gpumem-tui",
        "__meta_kubernetes_pod_name": f"gpumem-tui-export-{node}",
        "__meta_kubernetes_pod_node_name": node,
        "__meta_kubernetes_pod_label_app_kubernetes_io_name": "gpumem-tui",
        "__meta_kubernetes_pod_label_app_kubernetes_io_component": component,
        "__meta_kubernetes_pod_container_port_name": "metrics",
    }


def simulated_text() -> str:
    """The newest sample of each dcgm-exporter and vLLM series of SIMULATED, as a scrape answers it."""
    newest: dict[tuple, tuple[float, str]] = {}
    for name, labels, value, at in series_rows(SIMULATED, end_s=45, step_s=15):
        if name.startswith(("DCGM_", "vllm:")):
            key = (name, tuple(sorted(labels.items())))
            if key not in newest or at >= newest[key][0]:
                text = ",".join(f"{k}={json.dumps(v)}" for k, v in labels.items())
                newest[key] = (at, f"{name}{{{text}}} {value}\n")
    return "".join(line for _, line in newest.values())


def _handler(body: bytes) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            # A scrape Prometheus gave up on (its 1 s timeout, on a loaded machine) is no error of the test's.
            with suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    return Handler


def scrape_job(targets: dict[str, str], folder: Path) -> dict:
    """SCRAPE_CONFIG's job, discovering `targets` (node -> address) from a file, plus
    one pod of another component at the first address, which the job's relabeling must drop."""
    [job] = yaml.safe_load(SCRAPE_CONFIG.read_text(encoding="utf-8"))["scrape_configs"]
    first = next(iter(targets.values()))
    groups = [{"targets": [address], "labels": pod_meta(node)} for node, address in targets.items()]
    groups.append({"targets": [first], "labels": pod_meta("node-9", component="other")})
    (folder / "pods.json").write_text(json.dumps(groups), encoding="utf-8")
    del job["kubernetes_sd_configs"]
    return {
        **job,
        "scrape_interval": "1s",
        "scrape_timeout": "1s",
        "file_sd_configs": [{"files": [str(folder / "pods.json")]}],
    }


def query(url: str, promql: str, **params: str) -> list[dict]:
    """The answer's series (instant, or a range when `start` is given)."""
    path = "query_range" if "start" in params else "query"
    with urllib.request.urlopen(
        f"{url}/api/v1/{path}?{urllib.parse.urlencode({'query': promql, **params})}", timeout=10
    ) as r:
        return json.load(r)["data"]["result"]


@pytest.fixture(scope="package")
def deploy_prometheus(tmp_path_factory) -> Iterator[str]:
    require_prometheus()
    folder = tmp_path_factory.mktemp("deploy")
    with ExitStack() as stack:
        targets = {
            node: urllib.parse.urlsplit(stack.enter_context(exporter("--demo", *demo, env={"NODE_NAME": node}))).netloc
            for node, demo in NODES.items()
        }
        fleet = stack.enter_context(serving(_handler(simulated_text().encode())))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [
                scrape_job(targets, folder),
                {
                    "job_name": "simulated",
                    "honor_labels": True,
                    "static_configs": [{"targets": [urllib.parse.urlsplit(fleet).netloc]}],
                },
            ],
        }
        (folder / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
        url = stack.enter_context(running(folder / "data", config=folder / "prometheus.yml"))
        deadline = time.monotonic() + 60
        # Every target scraped three times: a rate over the counters has two samples.
        while not query(url, "count(count_over_time(up[1m]) >= 3) == 4"):
            assert time.monotonic() < deadline, f"targets after 60 s: {query(url, 'up')}"
            time.sleep(0.2)
        yield url
