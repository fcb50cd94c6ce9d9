"""Each rule on hand-built samples: when it fires, when it stays quiet, and the numbers it states."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import engine_plans, plan_by_gpu
from gpumem_tui.diagnosis.diagnose import diagnose
from gpumem_tui.diagnosis.findings import Finding, Thresholds
from gpumem_tui.diagnosis.findings.trend import seconds_to_full, slope_bytes_per_s
from gpumem_tui.diagnosis.history import History
from gpumem_tui.diagnosis.overlays import ManualPlan
from gpumem_tui.models import SourceError

from .build import ENGINE_CMD, LLAMA_8B, codes, engine, gpu, process, sample


def run(catalog, s, history=None, manual=None, thresholds=None):
    history = history or History()
    if not history.timestamps:
        history.add(s)
    plans = engine_plans(s, catalog, manual)
    return diagnose(plans, s, history, thresholds or Thresholds())


def test_nvml_unavailable_is_critical_and_says_why(catalog):
    s = sample(errors=[SourceError(source="nvml", message="NVML library not found", hint="install the driver")])
    [finding] = run(catalog, s)
    assert (finding.code, finding.severity, finding.try_this) == ("nvml_unavailable", "critical", "install the driver")


def test_unattributed_memory_over_the_threshold_only(catalog):
    quiet = sample(gpus=[gpu(used_gib=10.5)], processes=[process(3000, 10)])
    assert "unattributed_memory" not in codes(run(catalog, quiet))
    loud = sample(gpus=[gpu(used_gib=14)], processes=[process(3000, 10)])
    [finding] = [f for f in run(catalog, loud) if f.code == "unattributed_memory"]
    assert finding.title == "memory no visible process holds on GPU 0: 4.00 GiB used"


def test_headroom_thresholds_without_a_plan(catalog):
    assert "headroom_low" not in codes(run(catalog, sample(gpus=[gpu(used_gib=70)])))
    warning = run(catalog, sample(gpus=[gpu(used_gib=73)]))
    assert [f.severity for f in warning if f.code == "headroom_low"] == ["warning"]
    critical = run(catalog, sample(gpus=[gpu(used_gib=77)]))
    assert [f.severity for f in critical if f.code == "headroom_low"] == ["critical"]


def test_headroom_projects_time_to_full_from_the_trend(catalog):
    history = History()
    for k in range(7):  # +0.5 GiB every 10 s
        history.add(sample(t=1000 + 10 * k, gpus=[gpu(used_gib=70 + 0.5 * k)]))
    last = sample(t=1060, gpus=[gpu(used_gib=73)])
    [finding] = [f for f in run(catalog, last, history) if f.code == "headroom_low"]
    assert "6.65 GiB free" in finding.explanation and "grew 3.00 GiB/min" in finding.explanation
    assert "full in about 2 min" in finding.explanation  # 6.65 GiB at 3 GiB/min: 133 s


def test_trend_math():
    points = [(0.0, 0), (10.0, 100), (20.0, 200)]
    assert slope_bytes_per_s(points) == 10.0
    assert seconds_to_full(points, 1000, min_slope=0) == 100.0
    assert seconds_to_full([(0.0, 5), (10.0, 5)], 1000, min_slope=0) is None
    assert slope_bytes_per_s([(0.0, 1)]) is None


def test_foreign_process_only_beside_an_engine(catalog):
    procs = [process(2100, 60, name="VLLM::EngineCore", cmdline=ENGINE_CMD), process(3100, 8, name="python3")]
    with_engine = sample(gpus=[gpu(used_gib=68)], processes=procs, engines=[engine()])
    [finding] = [f for f in run(catalog, with_engine) if f.code == "foreign_process"]
    assert (finding.pid, finding.severity) == (3100, "warning") and "8.00 GiB" in finding.title
    alone = sample(gpus=[gpu(used_gib=8)], processes=[process(3100, 8, name="python3")])
    assert "foreign_process" not in codes(run(catalog, alone))


def test_engine_given_without_pids_is_recognised_by_its_command_line(catalog):
    procs = [process(2100, 60, name="VLLM::EngineCore", cmdline=ENGINE_CMD), process(3100, 1, name="python3")]
    s = sample(gpus=[gpu(used_gib=61)], processes=procs, engines=[engine(pids=())])
    findings = run(catalog, s)
    assert [f.pid for f in findings if f.code == "foreign_process"] == [3100]
    plan = engine_plans(s, catalog)[0]
    assert plan.gpu_indices == [0] and any("no pid was given" in a for a in plan.assumed)


def _loading(t: float, gib: float):
    """The 8B engine at time t, holding `gib` on GPU 0 while its endpoint answers 503."""
    procs = [process(2100, gib, name="VLLM::EngineCore", cmdline=ENGINE_CMD)]
    return sample(t=t, gpus=[gpu(used_gib=gib)], processes=procs, engines=[engine(state="down")])


def _watched(samples) -> History:
    history = History()
    for s in samples:
        history.add(s)
    return history


def test_an_engine_that_never_answered_while_its_memory_grows_is_starting_at_info(catalog):
    samples = [_loading(1000 + 10 * k, 2 + 0.5 * k) for k in range(30)]  # 290 s of weights loading
    findings = run(catalog, samples[-1], _watched(samples))
    assert "engine_down" not in codes(findings)
    [starting] = [f for f in findings if f.code == "engine_starting"]
    assert starting.severity == "info" and starting.endpoint == "http://127.0.0.1:8000"
    assert starting.title.startswith("engine starting on GPU 0: ") and starting.title.endswith(" :8000)")
    # 16.5 GiB held: past the weights, so the whole process is counted against the plan
    assert "weights loaded, 16.50 of" in starting.title and "GiB planned in all" in starting.title


def test_loading_progress_counts_the_weights_against_the_plan(catalog):
    first = _loading(1000, 6.0)
    [starting] = [f for f in run(catalog, first) if f.code == "engine_starting"]
    plan = engine_plans(first, catalog)[0]
    loaded = 6.0 - (0.5 * 2**30 + plan.prediction.non_torch_bytes) / 2**30
    assert f"weights {loaded:.2f} of {plan.prediction.weights_bytes / 2**30:.2f} GiB planned" in starting.title
    assert "not been watched long enough" in starting.explanation  # one reading: too soon to call it stuck


def test_an_engine_flat_for_the_stall_time_without_answering_is_a_warning(catalog):
    samples = [_loading(1000 + 10 * k, 17.2) for k in range(20)]  # 190 s flat, never an answer
    [down] = [f for f in run(catalog, samples[-1], _watched(samples)) if f.code == "engine_down"]
    assert down.severity == "warning" and "flat for 3 min" in down.explanation
    assert "engine_starting" in codes(run(catalog, samples[-1], _watched(samples[-10:])))  # 90 s: too soon to tell
    longer = Thresholds(engine_stall_s=600)
    assert "engine_starting" in codes(run(catalog, samples[-1], _watched(samples), thresholds=longer))


def test_an_engine_that_answered_before_and_now_does_not_is_down_not_starting(catalog):
    procs = [process(2100, 70, name="VLLM::EngineCore", cmdline=ENGINE_CMD)]
    served = sample(t=1000, gpus=[gpu()], processes=procs, engines=[engine()])
    silent = sample(t=1010, gpus=[gpu()], processes=procs, engines=[engine(state="down")])
    findings = run(catalog, silent, _watched([served, silent]))
    assert [f.severity for f in findings if f.code == "engine_down"] == ["warning"]
    assert "engine_starting" not in codes(findings)
    gone = sample(gpus=[gpu(used_gib=0)], engines=[engine(state="down")])
    assert [f.severity for f in run(catalog, gone) if f.code == "engine_down"] == ["critical"]


def test_the_stall_time_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("GPUMEM_TUI_ENGINE_STALL_S", "30")
    assert Thresholds().engine_stall_s == 30.0


def test_context_too_long_for_the_planned_users(catalog):
    procs = [process(2100, 72, name="VLLM::EngineCore", cmdline=ENGINE_CMD)]
    s = sample(gpus=[gpu(used_gib=72)], processes=procs, engines=[engine()])
    manual = ManualPlan(model=catalog.model(LLAMA_8B), max_model_len=131_072, users=8)
    [finding] = [f for f in run(catalog, s, manual=manual) if f.code == "context_too_long"]
    assert "8 x 131,072 tokens = 1,048,576 tokens" in finding.explanation
    assert "442,864 tokens" in finding.explanation  # the engine's own pool, not the plan's
    assert "lower --max-model-len to 55,358" in finding.try_this
    few = ManualPlan(model=catalog.model(LLAMA_8B), max_model_len=8192, users=8)
    assert "context_too_long" not in codes(run(catalog, s, manual=few))


def test_kv_saturated_needs_pressure_not_just_a_full_cache(catalog):
    procs = [process(2100, 72, name="VLLM::EngineCore", cmdline=ENGINE_CMD)]
    full_no_queue = sample(gpus=[gpu(used_gib=72)], processes=procs, engines=[engine(kv_usage_fraction=0.95)])
    assert "kv_saturated" not in codes(run(catalog, full_no_queue))
    queued = sample(
        gpus=[gpu(used_gib=72)],
        processes=procs,
        engines=[engine(kv_usage_fraction=0.95, requests_waiting=40, requests_running=140)],
    )
    [finding] = [f for f in run(catalog, queued) if f.code == "kv_saturated"]
    assert "140 running, 40 waiting" in finding.explanation and "3,005 tokens" in finding.explanation


def test_thresholds_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("GPUMEM_TUI_HEADROOM_WARNING_FRACTION", "0.2")
    assert Thresholds().headroom_warning_fraction == 0.2
    assert Thresholds(headroom_warning_fraction=0.3).headroom_warning_fraction == 0.3


def test_findings_sort_most_severe_first_and_keep_outside_text_literal(catalog):
    procs = [
        process(2100, 60, name="VLLM::EngineCore", cmdline=ENGINE_CMD),
        process(3100, 17, name="[bold]x\x1b[31m", cmdline=["[red]evil"]),
    ]
    s = sample(gpus=[gpu(used_gib=77.5)], processes=procs, engines=[engine()])
    findings = run(catalog, s)
    assert findings[0].severity == "critical"
    foreign = next(f for f in findings if f.code == "foreign_process")
    assert "[bold]x\x1b[31m" in foreign.title and "[red]evil" in foreign.explanation
    assert set(Finding.model_fields) >= {"severity", "code", "title", "explanation", "try_this"}


def test_judge_gives_overlays_per_gpu_and_findings(catalog):
    procs = [process(2100, 72, name="VLLM::EngineCore", cmdline=ENGINE_CMD)]
    s = sample(gpus=[gpu(used_gib=72), gpu(index=1, used_gib=0)], processes=procs, engines=[engine()])
    history = History()
    history.add(s)
    plans = engine_plans(s, catalog)
    overlays, findings = plan_by_gpu(plans), diagnose(plans, s, history, Thresholds())
    assert list(overlays) == [0] and overlays[0].label == "auto"
    assert all(f.severity == "info" for f in findings)
