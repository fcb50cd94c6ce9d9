"""Each simulated scenario, served over real HTTP and scraped, produces the findings it was written to show."""

from __future__ import annotations

import re

import pytest

from gpumem_tui.demo import load_scenario
from gpumem_tui.demo.driver_abi import ERROR_INSUFFICIENT_SIZE, ERROR_NOT_FOUND, ERROR_TIMEOUT
from gpumem_tui.demo.plan import scenario_plan
from gpumem_tui.diagnosis.findings import worst
from gpumem_tui.diagnosis.overlays import ManualPlan

from .build import codes


@pytest.mark.parametrize("at", [60, 200, 450])
async def test_healthy_node_has_nothing_above_info(run_demo, at):
    plans, findings = await run_demo("healthy-8b", at)
    assert plans[0].label == "auto" and plans[0].prediction is not None
    assert worst(findings) in (None, "info"), [f.title for f in findings]


@pytest.mark.parametrize("name", ["tp4-70b", "idle-node"])
async def test_other_calm_nodes_have_nothing_above_info(run_demo, name):
    _plans, findings = await run_demo(name, 300)
    assert worst(findings) in (None, "info"), [f.title for f in findings]


async def test_kv_pressure_says_what_more_capacity_would_hold(run_demo):
    _plans, findings = await run_demo("kv-pressure", 300)
    saturated = next(f for f in findings if f.code == "kv_saturated")
    assert saturated.severity == "warning" and "waiting" in saturated.explanation
    assert "One more GPU (tensor parallel 1 -> 2) would hold about" in saturated.explanation
    assert "An FP8 KV cache would hold about" in saturated.explanation
    assert worst(findings) == "warning"
    # the scraper follows the scenario's clock: a rate per simulated minute, not per wall-clock millisecond
    rate = float(re.search(r"([\d,.]+) preemptions/min", saturated.explanation).group(1).replace(",", ""))
    assert 0 < rate < 2000


async def test_kv_pressure_before_the_ramp_is_quiet(run_demo):
    _plans, findings = await run_demo("kv-pressure", 50)
    assert "kv_saturated" not in codes(findings)


async def test_noisy_neighbour_names_the_notebook_and_the_low_headroom(run_demo):
    _plans, findings = await run_demo("noisy-neighbour", 50)
    assert {"foreign_process", "headroom_low"} <= codes(findings, "critical")
    foreign = next(f for f in findings if f.code == "foreign_process")
    assert foreign.pid == 3100 and "python3" in foreign.title and "20.00 GiB" in foreign.title
    assert "ipykernel_launcher" in foreign.explanation


async def test_noisy_neighbour_while_the_notebook_grows_projects_time_to_full(run_demo):
    _plans, findings = await run_demo("noisy-neighbour", 46, step=1)
    headroom = next(f for f in findings if f.code == "headroom_low")
    assert "the card is full in about" in headroom.explanation


async def test_noisy_neighbour_after_the_oom_reports_the_engine_down(run_demo):
    _plans, findings = await run_demo("noisy-neighbour", 300)
    down = next(f for f in findings if f.code == "engine_down")
    assert down.severity == "critical" and "has exited" in down.explanation


async def test_wrong_precision_against_its_fp8_plan(run_demo, catalog):
    plan = scenario_plan(load_scenario("wrong-precision"), catalog)
    assert plan is not None and plan.quantization == "fp8"
    plans, findings = await run_demo("wrong-precision", 300, manual=plan)
    assert plans[0].label == "manual"
    assert {"weights_mismatch", "kv_pool_short"} <= codes(findings, "critical")
    assert "kv_saturated" in codes(findings)
    weights = next(f for f in findings if f.code == "weights_mismatch")
    assert "wrong precision" in weights.explanation and "GiB" in weights.explanation


async def test_wrong_precision_without_a_plan_still_sees_the_full_pool(run_demo):
    plans, findings = await run_demo("wrong-precision", 300)
    assert plans[0].label == "auto" and "weights_mismatch" not in codes(findings)
    assert "kv_saturated" in codes(findings, "warning")


async def test_gpu_lost_and_its_engine(run_demo):
    _plans, findings = await run_demo("gpu-lost", 300)
    lost = [f for f in findings if f.code == "gpu_lost"]
    assert [f.gpu_index for f in lost] == [2] and lost[0].severity == "critical"
    down = [f for f in findings if f.code == "engine_down"]
    assert len(down) == 1 and down[0].severity == "critical"


@pytest.mark.parametrize("symbol", ["nvmlDeviceGetUtilizationRates", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetUUID"])
async def test_one_reading_timing_out_is_not_memory_nobody_holds(run_demo, symbol):
    """A Timeout on one reading used to drop the card's processes: its memory then looked unattributed."""
    _plans, findings = await run_demo("healthy-8b", 300, faults=[(symbol, ERROR_TIMEOUT, 0)])
    assert worst(findings) == "info" and "unattributed_memory" not in codes(findings)


@pytest.mark.parametrize("code", [ERROR_TIMEOUT, ERROR_INSUFFICIENT_SIZE])
async def test_a_process_list_that_failed_is_not_memory_nobody_holds(run_demo, code):
    """The list grew past the binding's second call, or timed out: who holds the memory is unknown this
    sample, which is not the same as nobody."""
    _plans, findings = await run_demo("healthy-8b", 300, faults=[("nvmlDeviceGetComputeRunningProcesses_v3", code, 0)])
    assert "unattributed_memory" not in codes(findings)


async def test_a_manual_plan_for_another_model_applies_to_every_engine(run_demo, catalog):
    manual = ManualPlan(model=catalog.model("meta-llama/Llama-3.1-70B"), users=4)
    plans, _findings = await run_demo("healthy-8b", 300, manual=manual)
    assert [p.label for p in plans] == ["manual"] and plans[0].model == "meta-llama/Llama-3.1-70B"


async def test_a_mig_card_whose_mig_devices_cannot_be_opened_is_not_memory_nobody_holds(run_demo):
    """As root the MIG card's own list names its processes with no memory each (nvml.h: aggregate only);
    read from there when no MIG device handle answers, what they hold is unknown, not nothing."""
    _plans, findings = await run_demo(
        "mig-node", 20, faults=[("nvmlDeviceGetMigDeviceHandleByIndex", ERROR_NOT_FOUND, 0)]
    )
    assert "unattributed_memory" not in codes(findings)
