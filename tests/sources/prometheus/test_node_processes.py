"""A node that runs `gpumem-tui export` beside dcgm-exporter and vLLM: its per-process series (processes that
are not an engine, docs/export.md) are the node's processes in Prometheus, so `check --prometheus --node`
judges a foreign process on the engine's GPU as the node's own check would."""

from __future__ import annotations

import asyncio
import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.sources.prometheus.client import Connection
from gpumem_tui.sources.prometheus.node_feed import prometheus_node_feed
from tests.sources.prometheus.server import T0, backfill, require_prometheus, running

pytestmark = pytest.mark.prometheus
AT = T0 + 60
GPU = 'gpu="0",UUID="GPU-1f2e3d4c-0000-4000-8000-00000000000a",modelName="NVIDIA H100 80GB HBM3",Hostname="node-x"'
ENGINE = 'model_name="meta-llama/Llama-3.1-8B-Instruct",engine="0",job="vllm",instance="10.9.1.5:8000"'
SERIES = (
    f'DCGM_FI_DEV_FB_USED{{{GPU},namespace="serving",pod="vllm-x",job="dcgm-exporter"}} 72000 {{t}}\n'
    f'DCGM_FI_DEV_FB_FREE{{{GPU},namespace="serving",pod="vllm-x",job="dcgm-exporter"}} 9000 {{t}}\n'
    f'DCGM_FI_DEV_FB_RESERVED{{{GPU},namespace="serving",pod="vllm-x",job="dcgm-exporter"}} 470 {{t}}\n'
    f'vllm:kv_cache_usage_perc{{{ENGINE},namespace="serving",pod="vllm-x"}} 0.2 {{t}}\n'
    f'vllm:cache_config_info{{{ENGINE},namespace="serving",pod="vllm-x",block_size="16",num_gpu_blocks="9000",'
    'gpu_memory_utilization="0.6",cache_dtype="auto"} 1 {t}\n'
    f'gpumem_process_memory_used_bytes{{{GPU},pid="4242",process_name="python3",job="gpumem-tui"}} 21474836480 {{t}}\n'
    f'gpumem_process_memory_used_bytes{{{GPU},pid="other",job="gpumem-tui"}} 0 {{t}}\n'
)
"""An 8B engine in pod serving/vllm-x on GPU 0, and a python3 (pid 4242) beside it holding 20 GiB."""


@pytest.fixture(scope="module")
def node_url(tmp_path_factory):
    require_prometheus()
    text = "".join(SERIES.replace("{t}", str(T0 + s)) for s in range(0, 61, 5)) + "# EOF\n"
    with running(backfill(text, tmp_path_factory.mktemp("node-x"))) as url:
        yield url


def test_the_exporter_s_processes_are_the_node_s_processes(node_url):
    sample = asyncio.run(prometheus_node_feed(Connection(node_url), "node-x", at=AT).sample())
    (process,) = sample.processes  # the `pid="other"` rest row is no process
    assert (process.pid, process.gpu_index, process.gpu_memory_bytes, process.name) == (4242, 0, 20 * 2**30, "python3")
    assert sample.engines[0].devices == ["GPU-1f2e3d4c-0000-4000-8000-00000000000a"]


def test_check_judges_the_foreign_process_and_says_the_fleet_does_not(node_url, capsys):
    code = main(["check", "--prometheus", node_url, "--node", "node-x", "--at", str(AT), "--json"])
    checked = json.loads(capsys.readouterr().out)
    (foreign,) = [f for f in checked["findings"] if f["code"] == "foreign_process"]
    assert foreign["pid"] == 4242 and foreign["gpu_index"] == 0 and code >= 1
    (said,) = [d for d in checked["fleet_differs"] if d["code"] == "foreign_process"]
    assert said["only_in"] == "node" and "gpumem-tui export" in said["why"]
