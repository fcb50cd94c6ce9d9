"""SGLang joins the fleet through the engine registry: a real Prometheus scrapes the SGLang mock server's
/metrics (SGLang 0.5.6's names and labels, one series per TP rank) and `fleet snapshot` / `fleet check` report
that engine, its pool from `sglang:max_total_num_tokens`, in SGLang's own words; and the demo fleet's SGLang
node is read alike. Marked `prometheus`."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request

import pytest

from gpumem_tui.cli import main
from gpumem_tui.demo.engine_server import MockEngineServer
from gpumem_tui.demo.engine_state import EngineState
from gpumem_tui.diagnosis.sglang_plan import UNSIZED
from tests.sources.engines.conftest import LLAMA
from tests.sources.prometheus.server import require_prometheus, running, scrape_config

pytestmark = pytest.mark.prometheus


def _has(url: str, name: str) -> bool:
    query = urllib.parse.urlencode({"query": f"count({name})"})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=5) as response:  # noqa: S310 - loopback
            return bool(json.load(response)["data"]["result"])
    except OSError:
        return False


def _json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_a_real_prometheus_scraping_sglang_reports_its_engine(tmp_path, capsys) -> None:
    require_prometheus()
    sglang = {"engine": "sglang", "tensor_parallel_size": 2, "kv_pool_tokens": 416748, "num_gpu_blocks": None}
    state = EngineState(**{**LLAMA, **sglang, "kv_usage_fraction": 0.99, "requests_waiting": 40})
    with MockEngineServer([state], "sglang") as server:
        target = urllib.parse.urlsplit(server.url).netloc
        with running(tmp_path / "data", config=scrape_config(tmp_path, [target], job="sglang")) as url:
            deadline = time.monotonic() + 60
            while not _has(url, "sglang:max_total_num_tokens"):
                assert time.monotonic() < deadline, "Prometheus has not scraped the SGLang server within 60 s"
                time.sleep(0.2)
            _, snapshot = _json(capsys, "fleet", "snapshot", "--prometheus", url, "--json")
            code, report = _json(capsys, "fleet", "check", "--prometheus", url, "--json")
    [engine] = snapshot["engines"]
    assert (engine["kind"], engine["model_name"], engine["job"]) == ("sglang", state.model, "sglang")
    assert engine["pool_tokens"] == 416748  # the two TP ranks' series are one engine
    assert (engine["kv_usage_fraction"], engine["requests_running"], engine["requests_waiting"]) == (0.99, 12, 40)
    assert engine["unknown"]["preemptions_per_min"] == "SGLang exports no preemption counter"
    assert engine["unknown"]["planned_bytes"] == UNSIZED
    [saturated] = [f for f in report["findings"] if f["code"] == "kv_saturated"]
    assert "--max-running-requests" in saturated["try_this"] and "--max-num-seqs" not in saturated["try_this"]
    assert code == report["exit_code"] >= 1


def test_the_demo_fleet_s_sglang_node(capsys) -> None:
    _, snapshot = _json(capsys, "fleet", "snapshot", "--demo", "--json")
    [engine] = [e for e in snapshot["engines"] if e["node"] == "node-j"]
    assert (engine["kind"], engine["joined"], engine["pod"]) == ("sglang", "found", "sglang-node-j-30000")
    assert engine["unknown"]["planned_bytes"] == UNSIZED and engine["plan"] is None
    _, node = _json(capsys, "snapshot", "--demo", "sglang-node", "--at", "120", "--json")
    assert engine["pool_tokens"] == node["engines"][0]["records"][0]["kv_pool_tokens"]
    assert all("kind" not in e for e in snapshot["engines"] if e["node"] != "node-j")  # vLLM's as they were
