"""A node that runs `gpumem-tui export` beside dcgm-exporter and vLLM: its per-process series (processes that
are not an engine, docs/export.md) are the node's processes in Prometheus, so `check --prometheus --node`
judges a foreign process on the engine's GPU as the node's own check would."""

from __future__ import annotations

import asyncio
import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Connection
from gpumem_tui.sources.prometheus.labels import LabelChoice
from gpumem_tui.sources.prometheus.node_feed import prometheus_node_feed
from tests.sources.prometheus.server import T0, backfill, require_prometheus, running

pytestmark = pytest.mark.prometheus
AT = T0 + 60
GPU = 'gpu="0",UUID="GPU-1f2e3d4c-0000-4000-8000-00000000000a",modelName="NVIDIA H100 80GB HBM3",Hostname="node-x"'
ENGINE = 'model_name="meta-llama/Llama-3.1-8B-Instruct",engine="0",job="vllm",instance="10.9.1.5:8000"'
DCGM = 'namespace="serving",pod="vllm-x",job="dcgm-exporter",instance="10.9.0.7:9400"'
"""dcgm-exporter's pod is at 10.9.0.7: `--node-label instance` names the node so."""
OURS = 'job="gpumem-tui",instance="10.9.0.8:9877"'
"""gpumem-tui export's pod has an address of its own: its series name the node by their `Hostname` only."""
SERIES = (
    f"DCGM_FI_DEV_FB_USED{{{GPU},{DCGM}}} 72000 {{t}}\n"
    f"DCGM_FI_DEV_FB_FREE{{{GPU},{DCGM}}} 9000 {{t}}\n"
    f"DCGM_FI_DEV_FB_RESERVED{{{GPU},{DCGM}}} 470 {{t}}\n"
    f'vllm:kv_cache_usage_perc{{{ENGINE},namespace="serving",pod="vllm-x"}} 0.2 {{t}}\n'
    f'vllm:cache_config_info{{{ENGINE},namespace="serving",pod="vllm-x",block_size="16",num_gpu_blocks="9000",'
    'gpu_memory_utilization="0.6",cache_dtype="auto"} 1 {t}\n'
    f'gpumem_process_memory_used_bytes{{{GPU},pid="4242",process_name="python3",{OURS}}} 21474836480 {{t}}\n'
    f'gpumem_process_memory_used_bytes{{{GPU},pid="other",{OURS}}} 0 {{t}}\n'
    f"gpumem_gpu_memory_total_bytes{{{GPU},{OURS}}} 85520809984 {{t}}\n"
)
"""An 8B engine in pod serving/vllm-x on GPU 0, and a python3 (pid 4242) beside it holding 20 GiB."""


@pytest.fixture(scope="module")
def node_url(tmp_path_factory):
    require_prometheus()
    text = "".join(SERIES.replace("{t}", str(T0 + s)) for s in range(0, 61, 5)) + "# EOF\n"
    with running(backfill(text, tmp_path_factory.mktemp("node-x"))) as url:
        yield url


def test_the_exporter_s_processes_are_the_node_s_processes(node_url):
    sample = asyncio.run(prometheus_node_feed(Connection(node_url), "node-x", at=AT, stale=stale).sample())
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


def test_under_node_label_the_node_s_exporter_is_still_read(node_url, capsys):
    """`--node-label instance` names node-x `10.9.0.7` (dcgm-exporter's pod); its gpumem-tui export names it
    `node-x`: the node's screen (its feed, forensics too) and check read that exporter's processes as with the
    default labels, found by the GPU both report."""
    feed = prometheus_node_feed(
        Connection(node_url), "10.9.0.7", at=AT, history_s=60, labels=LabelChoice("instance"), stale=stale
    )
    sample = asyncio.run(feed.sample())
    (process,) = sample.processes
    assert (sample.hostname, process.pid, process.gpu_memory_bytes) == ("10.9.0.7", 4242, 20 * 2**30)
    past = feed.past()
    assert past is not None
    assert {p.pid for s in past.read() for p in s.processes} == {4242}
    argv = ["check", "--prometheus", node_url, "--node", "10.9.0.7", "--at", str(AT), "--json"]
    main([*argv, "--node-label", "instance"])
    checked = json.loads(capsys.readouterr().out)
    assert [(f["code"], f["pid"]) for f in checked["findings"] if f["code"] == "foreign_process"] == [
        ("foreign_process", 4242)
    ]
    assert main(argv) == 3  # with the default labels, node-x is not named 10.9.0.7
    assert "no dcgm-exporter or gpumem-tui export series names node '10.9.0.7'" in capsys.readouterr().err
