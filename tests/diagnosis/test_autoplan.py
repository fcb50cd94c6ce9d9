"""The plan made from what is running: facts found and assumed, the local HF cache, a manual plan winning."""

from __future__ import annotations

import json
from pathlib import Path

from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.autoplan import engine_plans, plan_by_gpu
from gpumem_tui.diagnosis.overlays import ManualPlan
from gpumem_tui.engine_records import EndpointStatus
from gpumem_tui.sources.engines.launch_flags import launch_flags
from gpumem_tui.sources.engines.parse import parse_metrics
from tests.configs import SMALL_LLAMA

from .build import ENGINE_CMD, LLAMA_8B, engine, gpu, process, sample


def test_flags_are_read_from_a_vllm_command_line():
    flags = launch_flags(["vllm", "serve", "org/m", "-tp", "2", "--quantization=fp8", "--max-model-len", "4096"])
    assert flags == {
        "model": "org/m",
        "--tensor-parallel-size": "2",
        "--quantization": "fp8",
        "--max-model-len": "4096",
    }
    assert launch_flags(["python3", "-m", "x"]) == {}


def test_auto_plan_from_a_healthy_engine_matches_its_pool(catalog):
    s = sample(gpus=[gpu(used_gib=72)], processes=[process(2100, 72, cmdline=ENGINE_CMD)], engines=[engine()])
    [plan] = engine_plans(s, catalog)
    assert (plan.label, plan.model, plan.gpu_indices, plan.missing) == ("auto", LLAMA_8B, [0], None)
    assert "model meta-llama/Llama-3.1-8B-Instruct (from /metrics)" in plan.found
    assert "max length 8192 (from the engine's metrics)" in plan.found
    assert any(a.startswith("weights as the checkpoint ships them") for a in plan.assumed)
    assert abs(plan.prediction.kv_cache_tokens - 442_864) / 442_864 < 0.05  # the simulator's vLLM V1 pool
    assert plan_by_gpu([plan]) == {0: plan.overlay}


def test_split_from_the_gpus_its_processes_hold(catalog):
    procs = [
        process(2100 + k, 70, gpu_index=k, cmdline=["vllm", "serve", "meta-llama/Llama-3.1-70B"]) for k in range(4)
    ]
    s = sample(
        gpus=[gpu(k) for k in range(4)],
        processes=procs,
        engines=[engine(pids=(2100, 2101, 2102, 2103), model="meta-llama/Llama-3.1-70B")],
    )
    [plan] = engine_plans(s, catalog)
    assert plan.settings.tp == 4 and plan.gpu_indices == [0, 1, 2, 3]
    assert set(plan_by_gpu([plan])) == {0, 1, 2, 3}


def test_model_from_the_command_line_when_the_engine_is_down(catalog):
    procs = [process(2100, 20, cmdline=ENGINE_CMD + ["--quantization", "fp8"])]
    s = sample(gpus=[gpu(used_gib=20)], processes=procs, engines=[engine(state="down")])
    [plan] = engine_plans(s, catalog)
    assert "model meta-llama/Llama-3.1-8B-Instruct (from the command line)" in plan.found
    assert "quantization fp8 (from the command line)" in plan.found
    assert plan.settings.quantization == "fp8" and plan.settings.max_model_len == 8192


def test_unknown_model_from_the_local_hf_cache(catalog, tmp_path, monkeypatch):
    snapshot = tmp_path / "models--acme--tiny-1b" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(SMALL_LLAMA))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    s = sample(gpus=[gpu(used_gib=40)], processes=[process(2100, 40)], engines=[engine(model="acme/tiny-1b")])
    [plan] = engine_plans(s, catalog)
    assert plan.prediction is not None and any("config.json" in f for f in plan.found)
    missing = sample(gpus=[gpu()], processes=[process(2100, 40)], engines=[engine(model="acme/none")])
    [plan] = engine_plans(missing, catalog)
    assert plan.prediction is None and "not in the catalog or the local HF cache" in plan.missing


def test_manual_plan_wins_and_is_labelled(catalog):
    s = sample(gpus=[gpu(used_gib=72)], processes=[process(2100, 72, cmdline=ENGINE_CMD)], engines=[engine()])
    manual = ManualPlan(model=catalog.model(LLAMA_8B), kv_cache_dtype="fp8", users=30)
    [plan] = engine_plans(s, catalog, manual)
    assert (plan.label, plan.users, plan.settings.kv_cache_dtype) == ("manual", 30, "fp8")
    assert plan.overlay.label == "manual"


def test_manual_plan_without_an_engine_is_drawn_on_the_first_gpus(catalog):
    manual = ManualPlan(model=catalog.model("meta-llama/Llama-3.1-70B"), tp=2)
    [plan] = engine_plans(sample(gpus=[gpu(k, used_gib=0) for k in range(4)]), catalog, manual)
    assert plan.endpoint is None and plan.gpu_indices == [0, 1] and plan.settings.tp == 2
    assert engine_plans(sample(gpus=[gpu()]), catalog) == []


SGLANG_PAYLOAD = Path(__file__).parents[1] / "data/calibration/metrics/sglang_docs_production_metrics_llama31_8b.prom"


def test_an_sglang_engine_is_planned_by_sglang_s_rules_not_vllm_s(catalog):
    """Its metrics alone (no /get_server_info): SGLang's release defaults on this card, each said assumed."""
    records = parse_metrics(SGLANG_PAYLOAD.read_text(), "http://127.0.0.1:30000", whole=False)
    status = EndpointStatus(url="http://127.0.0.1:30000", state="ok", pids=[2100], records=records)
    sglang_cmd = ["python3", "-m", "sglang.launch_server", "--model-path", LLAMA_8B]
    s = sample(gpus=[gpu(used_gib=72)], processes=[process(2100, 72, cmdline=sglang_cmd)], engines=[status])
    [plan] = engine_plans(s, catalog)
    assert plan.missing is None and (plan.settings, plan.prediction) == (None, None)
    assert plan.sglang is not None and plan.sglang_settings is not None
    assert plan.sglang.mem_fraction_static == 0.835 and not plan.sglang.fraction_given  # 0.5.6's own on an H100
    assert plan_by_gpu([plan])[0] == plan.overlay and plan.overlay.kv_pool_tokens == plan.sglang.kv_cache_tokens
    assert f"model {LLAMA_8B} (from /metrics)" in plan.found
    said = " ".join(plan.assumed)
    assert "SGLang 0.5.6's sizing rules" in said and "mem_fraction_static 0.835, the default" in said
    assert plan.context_assumed


def test_an_sglang_engine_that_has_not_answered_is_known_by_its_command_line(catalog):
    sglang_cmd = ["python3", "-m", "sglang.launch_server", "--model", LLAMA_8B, "--port", "30000"]
    procs = [process(2100, 20, cmdline=sglang_cmd)]
    s = sample(gpus=[gpu(used_gib=20)], processes=procs, engines=[engine(state="down")])
    [plan] = engine_plans(s, catalog)
    assert plan.prediction is None and plan.sglang is not None
    assert "tp_size 1: the 1 GPU(s) its processes hold memory on (not stated by the engine)" in plan.assumed


async def test_a_manual_plan_is_not_drawn_on_gpus_this_process_may_not_open(catalog, tmp_path):
    """Through the real binding over the fake driver: the cgroup allows GPUs 2 and 3 only."""
    scenario = tmp_path / "job.toml"
    scenario.write_text('[[gpus]]\nmodel = "h100"\ncount = 2\ndenied = true\n\n[[gpus]]\nmodel = "h100"\ncount = 2\n')
    feed = DemoFeed(str(scenario), ManualClock(10))
    try:
        s = await feed.sample()
    finally:
        await feed.aclose()
    assert [(g.accessible, g.lost) for g in s.gpus] == [(False, False), (False, False), (True, False), (True, False)]
    manual = ManualPlan(model=catalog.model("meta-llama/Llama-3.1-70B"), tp=2)
    [plan] = engine_plans(s, catalog, manual)
    assert plan.gpu_indices == [2, 3] and plan.missing is None and plan.settings.tp == 2
