"""End to end (issue 16, section 3): three `gpumem-tui export --demo SCENARIO` processes on loopback ports,
scraped every second by a real Prometheus started with a generated config; then `gpumem-tui fleet check
--prometheus URL` finds each scenario's findings on the right node, with the exit status `gpumem-tui check
--demo SCENARIO --at T` gives the same moment, and `fleet snapshot` each node's memory as `snapshot --demo` reads
it (one answer per question). Marked `prometheus`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from contextlib import ExitStack

import pytest

from gpumem_tui.cli import main
from tests.export.exporter import ROOT, demo_exporters
from tests.sources.prometheus.server import require_prometheus, running, scrape_config

pytestmark = pytest.mark.prometheus

NODES = {
    # NODE_NAME of each exporter (as dcgm-exporter's Helm chart sets it): (scenario, moment)
    "node-1": ("noisy-neighbour", 48),  # critical: a notebook beside the engine, GPU 0 nearly full
    "node-2": ("kv-pressure", 120),  # warning: KV cache saturated, requests queue
    "node-3": ("healthy-8b", 90),  # ok: only the headroom vLLM leaves on purpose (info)
}


def _nodes_seen(url: str) -> set[str]:
    query = urllib.parse.urlencode({"query": "count by (Hostname) (gpumem_finding_active or gpumem_plan_bytes)"})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=5) as response:
            return {s["metric"].get("Hostname", "") for s in json.load(response)["data"]["result"]}
    except OSError:
        return set()


def _findings(report: dict, node: str | None = None) -> list[tuple]:
    return sorted(
        (f["code"], f["severity"], f["gpu_index"], f["endpoint"])
        for f in report["findings"]
        if node is None or f["node"] == node
    )


def _check(capsys, *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_fleet_check_over_three_exporters_says_what_each_node_s_check_says(tmp_path, capsys):
    require_prometheus()
    with ExitStack() as stack:
        targets = demo_exporters(stack, NODES)
        url = stack.enter_context(running(tmp_path / "data", config=scrape_config(tmp_path, targets)))
        deadline = time.monotonic() + 60
        while _nodes_seen(url) != set(NODES):
            assert time.monotonic() < deadline, f"Prometheus holds {_nodes_seen(url)} after 60 s, not {set(NODES)}"
            time.sleep(0.2)
        fleet = subprocess.run(
            [sys.executable, "-m", "gpumem_tui", "fleet", "check", "--prometheus", url, "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=60,
        )
        report = json.loads(fleet.stdout)
        _, snapshot = _check(capsys, "fleet", "snapshot", "--prometheus", url, "--json")
        expected = {}
        for node, (scenario, at) in NODES.items():
            # the node's memory as the node's own snapshot reads it, from the exporter (no dcgm-exporter here)
            _, seen = _check(capsys, "snapshot", "--demo", scenario, "--at", str(at), "--json")
            (ours,) = [n for n in snapshot["nodes"] if n["name"] == node]
            for field in ("used", "free", "total"):
                assert ours[f"{field}_bytes"] == sum(g[f"memory_{field}_bytes"] for g in seen["gpus"]), (node, field)
            engine_pids = {pid for e in seen["engines"] for pid in e["pids"]}
            others = sum(p["gpu_memory_bytes"] or 0 for p in seen["processes"] if p["pid"] not in engine_pids)
            assert (ours["memory_from"], ours["other_processes_bytes"]) == ("gpumem-tui export", others), node
            status, alone = _check(capsys, "check", "--demo", scenario, "--at", str(at), "--json")
            expected[node] = status
            assert _findings(report, node) == _findings(alone), node
            # the fleet narrowed to the node: its exit status is the node's own check's
            selector = f'{{Hostname="{node}"}}'
            code, one = _check(capsys, "fleet", "check", "--prometheus", url, "--selector", selector, "--json")
            assert (code, _findings(one)) == (status, _findings(alone)), node
            assert one["coverage"]["nodes"] == 1 and one["coverage"]["engines"] == 1 == one["coverage"]["joined"]
    assert expected == {"node-1": 2, "node-2": 1, "node-3": 0}
    assert fleet.returncode == 2 == report["exit_code"], fleet.stderr
    assert report["coverage"] == {"nodes": 3, "gpus": 3, "engines": 3, "joined": 3, "not_joined": 0}
    assert {f["node"] for f in report["findings"]} == set(NODES)  # nothing about the fleet as a whole
