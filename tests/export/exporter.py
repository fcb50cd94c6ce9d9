"""`gpumem-tui export` as a process on a free loopback port, scraped over real HTTP (urllib: httpx lives in
one module of the package) and parsed with prometheus_client's own parser."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from gpumem_tui.demo.scenario import scenario_dir

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = 'evil"} 1\ngpumem_fake{x="y"} 2 \\ \x1b]0;pwned\x07 \r [bold] ünï'
"""A process name with a quote and brace that would end the label set, a newline and a second series, a
backslash, terminal escapes, a carriage return, markup and letters beyond ASCII."""
SERVING = re.compile(r"serving (http://\S+/metrics)")
Series = dict[str, list[tuple[dict[str, str], float]]]
"""Sample name -> (labels, value) of each series."""


def hostile_scenario(folder: Path) -> Path:
    """noisy-neighbour with its notebook named HOSTILE, written as a scenario file in `folder`."""
    text = (scenario_dir() / "noisy-neighbour.toml").read_text(encoding="utf-8")
    assert 'name = "python3"' in text
    path = folder / "hostile-neighbour.toml"
    path.write_text(text.replace('name = "python3"', f"name = {json.dumps(HOSTILE)}"), encoding="utf-8")
    return path


ENGINE_POD = ("serving", "vllm-llama-8b-6f7c9d5b4-x7k2p")
NOTEBOOK_POD = ("research", "jupyter-ana-0")
SECOND_POD = ("team-b", "vllm-qwen-7b-5c4b7d9f6-m8n2p")


def _pod(namespace_name: tuple[str, str], uid: str) -> str:
    namespace, name = namespace_name
    return f'pod = {{ namespace = "{namespace}", name = "{name}", uid = "{uid}" }}\n'


def pods_scenario(folder: Path, shared: bool = False) -> Path:
    """noisy-neighbour on Kubernetes, written as a scenario file in `folder`: the engine in ENGINE_POD, the
    notebook in NOTEBOOK_POD. `shared`: a second engine (Qwen2.5 7B, in SECOND_POD) on the same GPU, both at a
    utilization that lets the two start."""
    text = (scenario_dir() / "noisy-neighbour.toml").read_text(encoding="utf-8")
    assert text.count("request_s = 20\n") == 1 and text.count("host_rss_gib = 6\n") == 1
    text = text.replace(
        "request_s = 20\n", "request_s = 20\n" + _pod(ENGINE_POD, "6c3f4e5d-7a8b-4c9d-8e0f-2a3b4c5d6e7f")
    )
    text = text.replace(
        "host_rss_gib = 6\n", "host_rss_gib = 6\n" + _pod(NOTEBOOK_POD, "7d4a5f6e-8b9c-4dae-9f10-3b4c5d6e7f80")
    )
    if shared:
        second = (
            '[[engines]]\nid = "qwen-7b"\nmodel = "Qwen/Qwen2.5-7B"\ngpus = [0]\ngpu_memory_utilization = 0.3\n'
            + _pod(SECOND_POD, "8e5b6a7f-9c0d-4ebf-a021-4c5d6e7f8091")
        )
        text = text.replace("gpu_memory_utilization = 0.75", "gpu_memory_utilization = 0.4")
        text = text.replace("[[processes]]", second + "\n[[processes]]", 1)
    path = folder / ("shared-gpu.toml" if shared else "noisy-neighbour-pods.toml")
    path.write_text(text, encoding="utf-8")
    return path


def scrape(url: str) -> Series:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode("utf-8")
    series: Series = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return series


def value(series: Series, name: str, **labels: str) -> float | None:
    """The value of the one series of `name` whose labels include `labels`; None when there is none."""
    found = [v for have, v in series.get(name, []) if all(have.get(k) == want for k, want in labels.items())]
    assert len(found) <= 1, f"{name}{labels}: {len(found)} series"
    return found[0] if found else None


@contextmanager
def exporter(*args: str, evaluations: int = 1, env: dict[str, str] | None = None) -> Iterator[str]:
    """The exporter's /metrics URL once it has published `evaluations` evaluations; stopped (SIGTERM) after.
    `env`: variables set for it beside this process's own."""
    with exporter_process(*args, evaluations=evaluations, env=env) as (url, _):
        yield url


def demo_exporters(stack: ExitStack, nodes: Mapping[str, tuple[str, float]]) -> list[str]:
    """One `export --demo SCENARIO --at T` per node (NODE_NAME: its name), each stopped with `stack`: their
    `host:port` scrape targets, in the order of `nodes`."""
    return [
        urllib.parse.urlsplit(
            stack.enter_context(exporter("--demo", scenario, "--at", str(at), env={"NODE_NAME": node}))
        ).netloc
        for node, (scenario, at) in nodes.items()
    ]


@contextmanager
def exporter_process(
    *args: str, evaluations: int = 1, env: dict[str, str] | None = None, descriptors: int | None = None
) -> Iterator[tuple[str, subprocess.Popen]]:
    """As `exporter`, with the process (its pid: what /proc says of it). `descriptors`: the most it may open
    (RLIMIT_NOFILE), where given."""
    command = [sys.executable, "-m", "gpumem_tui", "export", "--listen", "127.0.0.1:0", "--interval", "3600", *args]
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}

    def limited() -> None:
        if descriptors is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=limited
    )
    try:
        line = process.stdout.readline() if process.stdout else ""
        found = SERVING.search(line)
        assert found, f"no 'serving' line: {line!r}, stderr: {process.stderr.read() if process.stderr else ''}"
        url = found.group(1)
        deadline = time.monotonic() + 120
        while (value(scrape(url), "gpumem_exporter_samples_total") or 0) < evaluations:
            assert time.monotonic() < deadline, "the exporter published no evaluation in 120 s"
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            time.sleep(0.05)
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0, process.stderr.read() if process.stderr else ""
