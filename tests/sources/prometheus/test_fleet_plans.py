"""Plans for the fleet's engines, made here from the catalog with the single-node planner (autoplan's rules),
from what Prometheus says: the served model (or `--model-alias`), `vllm:cache_config_info`'s settings, the
GPUs joined to the engine (its split) and their card. Against the real server over conftest.FLEET."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli import main
from gpumem_tui.demo.fleet_series import sample_at
from gpumem_tui.diagnosis.autoplan import engine_plans
from gpumem_tui.units import fmt_both
from tests.sources.prometheus.conftest import AT

pytestmark = pytest.mark.prometheus


def _snapshot(capsys, url: str, *extra: str) -> tuple[int, dict]:
    code = main(["fleet", "snapshot", "--prometheus", url, "--at", str(AT), "--json", *extra])
    out = capsys.readouterr().out
    return code, json.loads(out) if out else {}


def _engines(snap: dict) -> dict[tuple[str, str], dict]:
    return {(e["node"], e["pod"] or e["instance"]): e for e in snap["engines"]}


def _node_plan(scenario: str) -> tuple[int, int]:
    """The single-node plan of the scenario's first engine at the same moment: (engine bytes over its GPUs,
    KV pool tokens)."""
    (sample,) = sample_at(scenario, [AT - 1767225600])
    plan = engine_plans(sample, load_catalog())[0]
    assert plan.overlay is not None and plan.prediction is not None and plan.settings is not None
    return plan.overlay.engine_bytes * plan.settings.tp, plan.prediction.kv_cache_tokens


def test_each_engine_of_a_catalog_model_is_planned_as_its_node_plans_it(fleet_url, capsys):
    """One answer per question: the fleet's plan of node-a's engine is the node's own auto plan (same model,
    settings, card and split), the one `gpumem-tui check` holds the engine against."""
    code, snap = _snapshot(capsys, fleet_url)
    assert code == 0
    engines = _engines(snap)
    a = engines[("node-a", "vllm-node-a-8000")]
    assert a["plan_from"] == "catalog"
    planned, tokens = _node_plan("healthy-8b")
    assert a["planned_bytes"] == planned
    assert a["plan"]["kv_cache_tokens"] == tokens and a["plan"]["tensor_parallel"] == 1
    assert a["plan"]["card"] == "H100-SXM-80GB" and a["plan"]["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert any("utilization 0.9 (from the engine's metrics)" in f for f in a["plan"]["found"])
    # the 70B engines of busy-node: TP 2, the GPUs dcgm-exporter gives their pod
    b = [e for e in snap["engines"] if e["node"] == "node-b"]
    assert {e["plan"]["tensor_parallel"] for e in b} == {2}
    assert any("split over 2 GPU(s)" in f for f in b[0]["plan"]["found"])
    # where they differ they say why: the node reads --quantization fp8 from the engine's command line,
    # which no series in Prometheus carries; the fleet's plan says it assumed the checkpoint's format
    (sample,) = sample_at("busy-node", [AT - 1767225600])
    node_plan = engine_plans(sample, load_catalog())[0]
    assert "quantization fp8 (from the command line)" in node_plan.found
    assert "weights as the checkpoint ships them (no --quantization seen)" in b[0]["plan"]["assumed"]
    assert {e["planned_bytes"] for e in b} != {_node_plan("busy-node")[0]}


def test_a_model_the_catalog_does_not_know_is_measured_only(fleet_url, capsys):
    _, snap = _snapshot(capsys, fleet_url)
    (nan,) = [e for e in snap["engines"] if e["node"] == "node-nan"]
    assert nan["planned_bytes"] is None and nan["plan_from"] is None and nan["plan"] is None
    assert nan["unknown"]["planned_bytes"].startswith("model 'm' is not in the catalog")
    assert "--model-alias m=ORG/MODEL" in nan["unknown"]["planned_bytes"]


def test_an_alias_names_the_catalog_model_of_a_served_name(fleet_url, capsys):
    _, snap = _snapshot(capsys, fleet_url, "--model-alias", "m=meta-llama/Llama-3.1-8B-Instruct")
    (nan,) = [e for e in snap["engines"] if e["node"] == "node-nan"]
    assert nan["plan_from"] == "catalog" and nan["planned_bytes"] > 0
    assert nan["plan"]["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert any("--model-alias" in f for f in nan["plan"]["found"])
    # node-nan's engine gives no cache_config_info: its settings are vLLM's defaults, said so
    assert any("(the default)" in a for a in nan["plan"]["assumed"])


@pytest.mark.parametrize(
    ("alias", "said"),
    [
        ("m", "--model-alias 'm': expected SERVED=ORG/MODEL"),
        ("=meta-llama/Llama-3.1-8B-Instruct", "--model-alias '=meta-llama/Llama-3.1-8B-Instruct': expected"),
        ("m=no-such/model", "--model-alias m=no-such/model: unknown model 'no-such/model'"),
    ],
)
def test_a_bad_alias_is_one_line_and_exit_2(fleet_url, capsys, alias, said):
    code = main(["fleet", "snapshot", "--prometheus", fleet_url, "--at", str(AT), "--model-alias", alias])
    err = capsys.readouterr().err
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_missing_catalog_directory_is_one_line_and_exit_2(fleet_url, capsys, tmp_path):
    code = main(["fleet", "snapshot", "--prometheus", fleet_url, "--catalog", str(tmp_path / "none")])
    err = capsys.readouterr().err
    assert code == 2 and "catalog directory not found" in err and len(err.strip().splitlines()) == 1


def test_the_snapshot_text_says_used_vs_planned_per_engine(fleet_url, capsys):
    assert main(["fleet", "snapshot", "--prometheus", fleet_url, "--at", str(AT)]) == 0
    lines = capsys.readouterr().out.splitlines()
    (a,) = [line for line in lines if line.startswith("  meta-llama/Llama-3.1-8B-Instruct at serving/vllm-node-a-8000")]
    planned, _ = _node_plan("healthy-8b")
    assert f"planned {fmt_both(planned)} (from the catalog)" in a
    (nan,) = [line for line in lines if line.startswith("  m at node-nan:8000")]
    assert "planned unknown: model 'm' is not in the catalog" in nan
