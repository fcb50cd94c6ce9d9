"""Findings from the catalog's plan against what Prometheus measured, judged by the single-node code's
arithmetic and thresholds (diagnosis/findings/plan.py): the KV pool vLLM carved (num_gpu_blocks x block_size)
against the plan's, and the weights left in dcgm-exporter's FB_USED of the engine's GPU."""

from __future__ import annotations

import pytest

from gpumem_tui.catalog import load_catalog
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.plans import plan_fleet
from gpumem_tui.sources.prometheus.records import Coverage, FleetEngine, FleetGpu, FleetNode, FleetSample

GIB = 2**30
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
H100 = "NVIDIA H100 80GB HBM3"


def _sample(blocks: int | None = None, used: int = 70 * GIB, **engine: object) -> FleetSample:
    total = 80 * GIB
    return FleetSample(
        source="http://p",
        evaluated_at=100.0,
        nodes=[FleetNode(name="n1", gpus=1, cards={H100: 1}, used_bytes=used, free_bytes=total - used)],
        gpus=[FleetGpu(node="n1", index="0", uuid="GPU-1", card=H100, used_bytes=used, total_bytes=total)],
        engines=[
            FleetEngine(
                model_name=MODEL,
                engine="0",
                namespace="ns",
                pod="vllm-1",
                node="n1",
                gpus=["GPU-1"],
                gpu_count=1,
                joined="found",
                join_reason="dcgm-exporter attributes 1 GPU(s) to pod ns/vllm-1",
                gpu_memory_utilization=0.9,
                block_size=16,
                cache_dtype="auto",
                num_gpu_blocks=blocks,
                pool_tokens=None if blocks is None else blocks * 16,
                **engine,
            )
        ],
        coverage=Coverage(nodes=1, gpus=1, engines=1, joined=1),
    )


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def plan(catalog):
    (engine,) = plan_fleet(_sample(), catalog).engines
    assert engine.plan is not None
    return engine.plan


def _found(sample: FleetSample, catalog, code: str) -> list:
    return [f for f in judge_fleet(plan_fleet(sample, catalog)) if f.finding.code == code]


def test_a_pool_short_of_the_plan_is_judged_with_the_node_s_tolerance(catalog, plan):
    t = Thresholds()
    planned_blocks = plan.kv_cache_tokens // 16
    within = int(planned_blocks * (1 - t.kv_pool_tolerance_fraction)) + 1
    assert _found(_sample(within), catalog, "kv_pool_short") == []
    (short,) = _found(_sample(int(planned_blocks * 0.8)), catalog, "kv_pool_short")
    assert short.node == "n1" and short.finding.severity == "warning" and short.finding.gpu_index is None
    assert short.finding.endpoint == "ns/vllm-1"
    assert short.finding.title.startswith("KV pool smaller than planned: ") and short.finding.title.endswith(
        "(Llama-3.1-8B-Instruct ns/vllm-1)"
    )
    assert f"the auto plan says {plan.kv_cache_tokens:,}" in short.finding.explanation  # the node's words
    (half,) = _found(_sample(planned_blocks // 3), catalog, "kv_pool_short")
    assert half.finding.severity == "critical"


def test_weights_twice_the_plan_in_fb_used_are_the_wrong_precision(catalog, plan):
    pool = plan.kv_cache_tokens
    as_planned = plan.weights_bytes + plan.overhead_bytes + pool * plan.kv_bytes_per_token
    assert _found(_sample(pool // 16, used=as_planned), catalog, "weights_mismatch") == []
    doubled = as_planned + plan.weights_bytes
    (wrong,) = _found(_sample(pool // 16, used=doubled), catalog, "weights_mismatch")
    assert wrong.finding.severity == "critical" and wrong.node == "n1"
    assert wrong.finding.title.startswith("weights 1.9x the plan: ")
    assert wrong.finding.title.endswith("(Llama-3.1-8B-Instruct ns/vllm-1)")
    assert "dcgm-exporter's FB_USED" in wrong.finding.explanation


def test_without_a_measured_pool_or_a_reading_nothing_is_judged(catalog):
    assert _found(_sample(None), catalog, "kv_pool_short") == []
    assert _found(_sample(None, used=200 * GIB), catalog, "weights_mismatch") == []


def test_a_plan_that_does_not_fit_while_the_engine_runs_is_a_note(catalog):
    """The 70B in BF16 (the format assumed: vLLM's metrics do not say FP8) leaves no KV pool on one H100, yet
    the engine carved one: an assumed fact is wrong, and its weights and pool are not held against it."""
    sample = _sample(1000)
    seventy = sample.engines[0].model_copy(update={"model_name": "meta-llama/Llama-3.1-70B"})
    sample = sample.model_copy(update={"engines": [seventy]})
    found = judge_fleet(plan_fleet(sample, catalog))
    assert not [f for f in found if f.finding.code in ("kv_pool_short", "weights_mismatch")]
    (note,) = [f for f in found if f.finding.code == "plan_note"]
    assert note.finding.severity == "info" and "16,000 tokens" in note.finding.explanation
    assert note.finding.title.startswith("the auto plan does not fit, yet the engine runs")


def test_an_engine_down_or_on_a_node_that_judges_itself_is_not_judged_here(catalog, plan):
    from gpumem_tui.sources.prometheus.records import NodeFinding

    short = _sample(plan.kv_cache_tokens // 16 // 3, job="vllm", instance="10.0.0.1:8000")
    assert _found(short, catalog, "kv_pool_short")
    down = short.model_copy(update={"targets_down": [{"job": "vllm", "instance": "10.0.0.1:8000"}]})
    assert _found(down, catalog, "kv_pool_short") == []
    judged = NodeFinding(node="n1", code="headroom_low", severity="info")
    assert _found(short.model_copy(update={"node_findings": [judged]}), catalog, "kv_pool_short") == []


def test_data_parallel_engines_of_one_pod_share_its_gpus(catalog):
    """vLLM's data-parallel engines in one pod (`engine` 0 and 1) share the GPUs dcgm-exporter gives the pod:
    each plans on its share, so the model's planned memory is the pod's GPUs' once, not twice."""
    sample = _sample(20000)
    first = sample.engines[0].model_copy(update={"gpu_count": 2, "gpus": []})
    second = first.model_copy(update={"engine": "1"})
    planned = plan_fleet(sample.model_copy(update={"engines": [first, second]}), catalog)
    plans = [e.plan for e in planned.engines]
    assert [p.tensor_parallel for p in plans if p] == [1, 1]
    assert all("shared by its 2 data-parallel engines" in " ".join(p.assumed) for p in plans if p)
