"""MIG on the fleet (reference/fleet.md 1.4): dcgm-exporter labels each GPU instance with `GPU_I_ID` and its
parent's `gpu`/`UUID`. Where the instances report memory beside their parent (DCGM >= 3.1.3 on A100), the
parent's figures are the card's and the instances are not added to them; where an instance reports no FB
field (dcgm-exporter #380, #512: H100), it is still listed, without memory, with the reason. A small backfill
of its own: a MIG node (one instance with FB fields, one with only a profiling field) and a plain node."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from tests.sources.prometheus.server import T0, backfill, require_prometheus, running

pytestmark = pytest.mark.prometheus

MIB = 2**20
CARD = 'modelName="NVIDIA H100 80GB HBM3",job="dcgm-exporter"'
HELD = 'Hostname="node-m",exported_namespace="serving",exported_pod="vllm-m"'
SERIES = [
    # the MIG-enabled card itself
    ("DCGM_FI_DEV_FB_USED", 'gpu="0",UUID="GPU-m0",Hostname="node-m"', 30000),
    ("DCGM_FI_DEV_FB_FREE", 'gpu="0",UUID="GPU-m0",Hostname="node-m"', 50000),
    ("DCGM_FI_DEV_FB_RESERVED", 'gpu="0",UUID="GPU-m0",Hostname="node-m"', 500),
    # instance 1 reports its memory (a part of the card's); the kubelet gave it to pod serving/vllm-m
    ("DCGM_FI_DEV_FB_USED", f'gpu="0",UUID="GPU-m0",GPU_I_ID="1",GPU_I_PROFILE="3g.40gb",{HELD}', 20000),
    ("DCGM_FI_DEV_FB_FREE", f'gpu="0",UUID="GPU-m0",GPU_I_ID="1",GPU_I_PROFILE="3g.40gb",{HELD}', 20000),
    (
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        'gpu="0",UUID="GPU-m0",GPU_I_ID="1",GPU_I_PROFILE="3g.40gb",Hostname="node-m"',
        0.5,
    ),
    # instance 2 reports no FB field at all, only a profiling one
    (
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        'gpu="0",UUID="GPU-m0",GPU_I_ID="2",GPU_I_PROFILE="3g.40gb",Hostname="node-m"',
        0.1,
    ),
    # a plain card on another node
    ("DCGM_FI_DEV_FB_USED", 'gpu="0",UUID="GPU-n0",Hostname="node-n"', 10000),
    ("DCGM_FI_DEV_FB_FREE", 'gpu="0",UUID="GPU-n0",Hostname="node-n"', 70000),
    ("DCGM_FI_DEV_FB_RESERVED", 'gpu="0",UUID="GPU-n0",Hostname="node-n"', 500),
]
ENGINE = 'model_name="meta-llama/Llama-3.1-8B-Instruct",engine="0",namespace="serving",pod="vllm-m",job="vllm"'
VLLM = [("vllm:kv_cache_usage_perc", f'{ENGINE},instance="10.0.0.9:8000"', 0.25)]
"""vLLM in pod serving/vllm-m, on MIG instance 1 of node-m's card."""
END_S, STEP_S = 60, 15


def _text() -> str:
    lines = []
    for family in dict.fromkeys(name for name, _, _ in SERIES):
        lines.append(f"# TYPE {family} gauge")
        for name, labels, value in SERIES:
            if name == family:
                lines += [f"{name}{{{labels},{CARD}}} {value} {T0 + s}" for s in range(0, END_S + 1, STEP_S)]
    for name, labels, value in VLLM:
        lines += [f"# TYPE {name} gauge"]
        lines += [f"{name}{{{labels}}} {value} {T0 + s}" for s in range(0, END_S + 1, STEP_S)]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require_prometheus()
    with running(backfill(_text(), tmp_path_factory.mktemp("mig"))) as address:
        yield address


@pytest.mark.parametrize("read", [(), ("--overview",)], ids=["full", "overview"])
def test_instances_are_not_counted_twice_and_one_without_memory_says_why(url, capsys, read):
    assert main(["fleet", "snapshot", "--prometheus", url, "--at", str(T0 + END_S), "--json", *read]) == 0
    snap = json.loads(capsys.readouterr().out)
    nodes = {n["name"]: n for n in snap["nodes"]}
    m = nodes["node-m"]
    assert (m["gpus"], m["used_bytes"], m["free_bytes"]) == (1, 30000 * MIB, 50000 * MIB)
    assert m["total_bytes"] == (30000 + 50000 + 500) * MIB
    assert snap["coverage"]["gpus"] == 2
    instances = {g["gpu_instance"]: g for g in snap["gpus"] if g["gpu_instance"]}
    bare = instances["2"]
    assert bare["node"] == "node-m" and bare["uuid"] == "GPU-m0" and bare["used_bytes"] is None
    assert bare["free_bytes"] is None and bare["total_bytes"] is None
    assert "MIG GPU instance" in bare["unknown"]["used_bytes"] and "#512" in bare["unknown"]["used_bytes"]
    if not read:
        assert instances["1"]["used_bytes"] == 20000 * MIB


def test_the_history_counts_a_mig_card_once_as_the_node_sums_do(url, capsys):
    """One answer per question: the history's newest point is the nodes' sums, a MIG card's instances not
    added to the card's own figures."""
    at = str(T0 + END_S)
    assert main(["fleet", "snapshot", "--prometheus", url, "--at", at, "--json", "--history", "1m"]) == 0
    snap = json.loads(capsys.readouterr().out)
    series = snap["history"]["series"]
    for field in ("used_bytes", "free_bytes", "reserved_bytes"):
        assert series[field][-1] == sum(n[field] for n in snap["nodes"]), field


@pytest.mark.parametrize("labels", [(), ("--pod-label", "pod")], ids=["held", "no-workload"])
def test_the_overview_never_says_an_instance_that_reports_memory_has_none(url, capsys, labels):
    """An instance that reports FB fields is never listed by the overview as one without them: it is read one
    by one (node-m is, its instance 1 being a pod's) or not listed (read with `pod`, no pod holds it, and
    node-m needs no look)."""
    at = str(T0 + END_S)
    assert main(["fleet", "snapshot", "--prometheus", url, "--at", at, "--json", "--overview", *labels]) == 0
    listed = {g["gpu_instance"]: g for g in json.loads(capsys.readouterr().out)["gpus"] if g["gpu_instance"]}
    assert "#512" in listed["2"]["unknown"]["used_bytes"]
    assert all(g["used_bytes"] is not None for name, g in listed.items() if name != "2")


@pytest.mark.parametrize("read", [("--full",), ("--overview",)], ids=["full", "overview"])
def test_a_model_on_a_mig_instance_uses_the_instance_memory_not_the_card(url, capsys, read):
    """The memory a model uses on a MIG card is its instance's (20,000 MiB), not the whole card's (30,000: the
    other instances' too), in both reads: one answer for the model table and `fleet check --json`."""
    assert main(["fleet", "check", "--prometheus", url, "--at", str(T0 + END_S), "--json", *read]) in (0, 1, 2)
    (model,) = json.loads(capsys.readouterr().out)["models"]
    assert model["model_name"] == "meta-llama/Llama-3.1-8B-Instruct" and model["gpus"] == ["GPU-m0"]
    assert model["used_bytes"] == 20000 * MIB, model["unknown"]
