"""An engine on a MIG GPU instance is planned against the instance's memory, never the whole card's: the
instance's total where dcgm-exporter reports it, else the memory its MIG profile names (assumed), else no
plan with the reason. test_mig.py's node (instance 1 reports its memory, held by serving/vllm-m) and two more
instances held by pods: one that reports FB_USED and no FB_FREE (its total unknown) under profile 1g.10gb,
one the same without a profile label."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.units import fmt_both
from tests.sources.prometheus.server import T0, backfill, require_prometheus, running
from tests.sources.prometheus.test_mig import CARD, END_S, ENGINE, MIB, SERIES, STEP_S

pytestmark = pytest.mark.prometheus

SMALL = 'Hostname="node-m",exported_namespace="serving",exported_pod="vllm-small"'
BARE = 'Hostname="node-m",exported_namespace="serving",exported_pod="vllm-bare"'
MORE = [
    ("DCGM_FI_DEV_FB_USED", f'gpu="0",UUID="GPU-m0",GPU_I_ID="3",GPU_I_PROFILE="1g.10gb",{SMALL}', 3000),
    ("DCGM_FI_DEV_FB_USED", f'gpu="0",UUID="GPU-m0",GPU_I_ID="4",{BARE}', 3000),
]
SMALL_ENGINE = 'model_name="meta-llama/Llama-3.2-1B",engine="0",namespace="serving",pod="vllm-small",job="vllm"'
BARE_ENGINE = 'model_name="meta-llama/Llama-3.2-1B",engine="0",namespace="serving",pod="vllm-bare",job="vllm"'
VLLM = [
    ("vllm:kv_cache_usage_perc", f'{ENGINE},instance="10.0.0.9:8000"', 0.25),
    ("vllm:kv_cache_usage_perc", f'{SMALL_ENGINE},instance="10.0.0.10:8000"', 0.1),
    ("vllm:kv_cache_usage_perc", f'{BARE_ENGINE},instance="10.0.0.11:8000"', 0.1),
]
INSTANCE_1 = (20000 + 20000) * MIB
"""Instance 1's used + free (it reports no reserved)."""


def _text() -> str:
    lines = []
    rows = [*SERIES, *MORE]
    for family in dict.fromkeys(name for name, _, _ in rows):
        lines.append(f"# TYPE {family} gauge")
        for name, labels, value in rows:
            if name == family:
                lines += [f"{name}{{{labels},{CARD}}} {value} {T0 + s}" for s in range(0, END_S + 1, STEP_S)]
    lines.append("# TYPE vllm:kv_cache_usage_perc gauge")
    for name, labels, value in VLLM:
        lines += [f"{name}{{{labels}}} {value} {T0 + s}" for s in range(0, END_S + 1, STEP_S)]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require_prometheus()
    with running(backfill(_text(), tmp_path_factory.mktemp("mig-plans"))) as address:
        yield address


def _engines(capsys, url: str, *read: str) -> dict[str, dict]:
    assert main(["fleet", "snapshot", "--prometheus", url, "--at", str(T0 + END_S), "--json", *read]) == 0
    return {e["pod"]: e for e in json.loads(capsys.readouterr().out)["engines"]}


@pytest.mark.parametrize("read", [("--full",), ("--overview",)], ids=["full", "overview"])
def test_an_engine_on_a_mig_instance_is_planned_for_the_instance(url, capsys, read):
    engine = _engines(capsys, url, *read)["vllm-m"]
    assert engine["plan_from"] == "catalog"
    assert 0.5 * INSTANCE_1 < engine["planned_bytes"] < INSTANCE_1, engine["plan"]
    assert "MIG GPU instance 1" in engine["plan"]["card"]
    assert any("MIG GPU instance 1" in fact and fmt_both(INSTANCE_1) in fact for fact in engine["plan"]["found"])


@pytest.mark.parametrize("read", [("--full",), ("--overview",)], ids=["full", "overview"])
def test_an_instance_whose_memory_is_not_read_is_planned_from_its_profile_or_not_at_all(url, capsys, read):
    engines = _engines(capsys, url, *read)
    small = engines["vllm-small"]
    assert small["planned_bytes"] is not None and small["planned_bytes"] < 10 * 2**30, small["unknown"]
    assert any("1g.10gb" in fact for fact in small["plan"]["assumed"])
    bare = engines["vllm-bare"]
    assert bare["planned_bytes"] is None and bare["plan"] is None
    why = bare["unknown"]["planned_bytes"]
    assert "MIG GPU instance 4" in why and "whole card" in why


def test_the_node_s_check_plans_each_mig_engine_as_the_fleet_does(url, capsys):
    """One answer per question: `check --prometheus --node` (and the node's screen, which judges the same sample)
    plans each engine of node-m against its MIG GPU instance with the memory `fleet` plans it with, and where
    the fleet cannot plan one it says the same reason; any finding that still differs says why."""
    fleet = _engines(capsys, url, "--full")
    at = str(T0 + END_S)
    assert main(["check", "--prometheus", url, "--node", "node-m", "--at", at, "--json"]) in (0, 1, 2)
    checked = json.loads(capsys.readouterr().out)
    plans = {p["endpoint"]: p for p in checked["plans"]}
    assert set(plans) == {f"serving/{pod}" for pod in fleet}
    for pod, engine in fleet.items():
        plan = plans[f"serving/{pod}"]
        assert plan["planned_bytes"] == engine["planned_bytes"], (pod, plan["missing"])
        if engine["planned_bytes"] is None:
            assert plan["missing"] == engine["unknown"]["planned_bytes"], pod
    assert any("MIG GPU instance 1" in f and fmt_both(INSTANCE_1) in f for f in plans["serving/vllm-m"]["found"])
    assert any("1g.10gb" in fact for fact in plans["serving/vllm-small"]["assumed"])
    assert all(d["why"] for d in checked["fleet_differs"]), checked["fleet_differs"]
