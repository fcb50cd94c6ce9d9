"""Findings never contradict the node: a plan for something else is said to be, measured sizes use the running
model's facts, agreement is claimed only after a comparison, and every engine finding says which engine."""

from __future__ import annotations

import json
import re

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.autoplan import engine_plans, plan_by_gpu
from gpumem_tui.diagnosis.compare import compare_rows
from gpumem_tui.diagnosis.diagnose import diagnose
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.history import History
from gpumem_tui.diagnosis.measured import measured_slices
from gpumem_tui.diagnosis.overlays import ManualPlan

from .build import ENGINE_CMD, LLAMA_8B, codes, engine, gpu, process, sample

OTHER_PLAN = ["--model", "llama-3.1-70b", "--weights", "fp8", "--kv-dtype", "fp8", "--gpus", "2"]


def _healthy():
    procs = [process(2100, 72, name="VLLM::EngineCore", cmdline=ENGINE_CMD)]
    return sample(gpus=[gpu(used_gib=72)], processes=procs, engines=[engine()])


def _judged(catalog, s, manual):
    history = History()
    history.add(s)
    plans = engine_plans(s, catalog, manual)
    return plans, diagnose(plans, s, history, Thresholds())


def test_a_plan_for_another_model_is_a_finding_with_both_sides(catalog):
    manual = ManualPlan(model=catalog.model("meta-llama/Llama-3.1-70B"), quantization="fp8", kv_cache_dtype="fp8", tp=2)
    plans, findings = _judged(catalog, _healthy(), manual)
    [mismatch] = [f for f in findings if f.code == "plan_mismatch"]
    assert mismatch.severity == "warning" and mismatch.endpoint == "http://127.0.0.1:8000"
    assert "model, weight format, KV cache dtype and split differ" in mismatch.title
    assert "meta-llama/Llama-3.1-70B, weights fp8, KV cache fp8, on 2 x H100-SXM-80GB" in mismatch.explanation
    runs = f"{LLAMA_8B}, weights bf16 (no --quantization), KV cache auto, on 1 x H100-SXM-80GB (GPU 0)"
    assert runs in mismatch.explanation
    # the 8B engine's pool is not held against the 70B plan's numbers
    assert not {"weights_mismatch", "kv_pool_short"} & codes(findings)
    assert plans[0].running is not None and plans[0].running.model == LLAMA_8B


def test_the_measured_kv_pool_is_counted_with_the_running_models_bytes(catalog):
    s = _healthy()
    manual = ManualPlan(model=catalog.model("meta-llama/Llama-3.1-70B"), quantization="fp8", kv_cache_dtype="fp8", tp=2)
    [plan] = engine_plans(s, catalog, manual)
    overlay = plan_by_gpu([plan])[0]
    rows = compare_rows(overlay, measured_slices(s, s.gpus[0]), s.engines[0].records[0])
    kv = next(r for r in rows if r.name == "KV pool")
    # Llama 3.1 8B, 16-bit KV on one GPU: 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 128 KiB a token
    assert kv.measured_bytes == 442_864 * 131_072
    plans_own = round(442_864 * overlay.kv_pool_bytes / overlay.kv_pool_tokens)  # 70B, fp8, split in two
    assert abs(plans_own - kv.measured_bytes) > 2**30


def test_a_plan_sized_for_another_gpu_is_a_finding_and_is_sized_as_planned(catalog):
    """The planner screen sizes a plan for the card chosen there; applied over an H100 it says so."""
    a100 = catalog.gpu("a100-80gb")
    manual = ManualPlan(model=catalog.model(LLAMA_8B), max_model_len=8192, gpu=a100)
    plans, findings = _judged(catalog, _healthy(), manual)
    [mismatch] = [f for f in findings if f.code == "plan_mismatch"]
    assert "GPU differs (" in mismatch.title
    assert f"on 1 x {a100.key}" in mismatch.explanation and "on 1 x H100-SXM-80GB (GPU 0)" in mismatch.explanation
    assert plans[0].settings.gpu.key == a100.key  # the plan drawn is the one the planner screen showed


def test_a_plan_that_matches_what_runs_raises_no_mismatch(catalog):
    manual = ManualPlan(model=catalog.model(LLAMA_8B), max_model_len=8192)
    _plans, findings = _judged(catalog, _healthy(), manual)
    assert "plan_mismatch" not in codes(findings)


def test_check_with_a_plan_for_another_model_says_so_and_does_not_exit_ok(capsys):
    assert main(["check", "--demo", "healthy-8b", "--verbose", *OTHER_PLAN]) == 1
    out = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert "plan_mismatch" in out and "model, weight format, KV cache dtype and split differ" in out
    assert "split over 2 GPU(s)" in out
    assert "split over 1 GPU(s)" not in out  # the engine's split is not reported as the plan's


def test_wrong_precision_is_one_finding_the_engine_loaded_the_wrong_format(capsys):
    """The scenario's plan is the intent (fp8); the engine loaded bf16 and its measured weights confirm it:
    weights_mismatch says so with the fix, and no plan_mismatch repeats the same fact with the opposite fix."""
    main(["check", "--demo", "wrong-precision", "--json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert "plan_mismatch" not in {f["code"] for f in findings}
    [weights] = [f for f in findings if f["code"] == "weights_mismatch"]
    assert weights["severity"] == "critical"
    assert "The engine loaded bf16 (no --quantization), not the fp8 planned" in weights["explanation"]
    assert weights["try_this"].startswith("restart vLLM with --quantization fp8")
    assert "the demo's scenario" in weights["try_this"] and "--model" not in weights["try_this"]


def test_an_idle_node_without_a_plan_does_not_claim_agreement(capsys):
    assert main(["check", "--demo", "idle-node"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no plan was compared" in out and "matches its plan" not in out and "agrees" not in out


def test_check_at_the_start_of_a_demo_shows_loading_not_a_warning(capsys):
    assert main(["check", "--demo", "healthy-8b", "--at", "5", "--json"]) == 0
    [starting] = json.loads(capsys.readouterr().out)["findings"]
    assert (starting["code"], starting["severity"]) == ("engine_starting", "info")
    assert re.search(r"weights \d+\.\d\d of 14\.99 GiB planned", starting["title"])


async def test_a_demo_engine_is_starting_until_it_answers(run_demo):
    for at in (0, 10, 20, 26):
        _plans, findings = await run_demo("healthy-8b", at, step=2)
        assert codes(findings) == {"engine_starting"}, (at, [f.title for f in findings])


async def test_every_engine_finding_on_a_busy_node_names_its_endpoint_and_gpus(run_demo):
    _plans, findings = await run_demo("busy-node", 300)
    engine_findings = [f for f in findings if f.endpoint]
    assert engine_findings
    for finding in engine_findings:  # the title short (GPUs, then the port), the explanation in full
        port = finding.endpoint.rsplit(":", 1)[1]
        assert re.search(rf" on GPU \d+(,\d+)*\b.* \(Llama-3.1-70B :{port}\)$", finding.title), finding.title
        assert re.search(rf"at {re.escape(finding.endpoint)} on GPU \d+(, \d+)*", finding.explanation), finding
    saturated = {f.endpoint: f.title for f in findings if f.code == "kv_saturated"}
    assert saturated["http://127.0.0.1:8003"].startswith("KV cache full on GPU 6,7: ")
