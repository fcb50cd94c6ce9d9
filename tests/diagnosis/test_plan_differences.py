"""A hand-set plan is compared with the engine by what decides memory: a plan for another split or KV cache
is a plan_mismatch and its numbers are not held against the engine's; a plan that differs only by name or
by a format of the same width is compared as is; findings name the engine by what it runs."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import engine_plans
from gpumem_tui.diagnosis.diagnose import diagnose
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.findings.differ import compared
from gpumem_tui.diagnosis.history import History
from gpumem_tui.diagnosis.overlays import ManualPlan

from .build import ENGINE_CMD, LLAMA_8B, codes, engine, gpu, process, sample


def _judged(catalog, s, manual):
    history = History()
    history.add(s)
    plans = engine_plans(s, catalog, manual)
    return plans, diagnose(plans, s, history, Thresholds())


def _healthy(used_gib: float = 72.0):
    procs = [process(2100, used_gib, name="VLLM::EngineCore", cmdline=ENGINE_CMD)]
    return sample(gpus=[gpu(used_gib=used_gib)], processes=procs, engines=[engine()])


def _manual(catalog, model=LLAMA_8B, **extra):
    return ManualPlan(model=catalog.model(model), max_model_len=8192, **extra)


def test_a_plan_for_another_split_is_one_warning_not_a_wrong_precision(catalog):
    plans, findings = _judged(catalog, _healthy(), _manual(catalog, tp=2))
    [mismatch] = [f for f in findings if f.code == "plan_mismatch"]
    assert "on GPU 0: split differs (" in mismatch.title and mismatch.severity == "warning"
    # the 2-GPU plan's per-GPU weights and pool are not held against the 1-GPU engine
    assert not {"weights_mismatch", "kv_pool_short"} & codes(findings)
    assert compared(plans, findings) == (0, 1)


def test_a_plan_for_another_kv_cache_dtype_is_a_mismatch_not_a_short_pool(catalog):
    _plans, findings = _judged(catalog, _healthy(), _manual(catalog, kv_cache_dtype="fp8"))
    [mismatch] = [f for f in findings if f.code == "plan_mismatch"]
    assert "on GPU 0: KV cache dtype differs (" in mismatch.title
    assert "KV cache fp8, on 1 x" in mismatch.explanation and "KV cache auto, on 1 x" in mismatch.explanation
    assert "kv_pool_short" not in codes(findings)


def test_a_kv_dtype_of_the_same_width_is_no_mismatch(catalog):
    _plans, findings = _judged(catalog, _healthy(), _manual(catalog, kv_cache_dtype="bf16"))
    assert "plan_mismatch" not in codes(findings)


def test_a_base_model_plan_over_its_instruct_tune_is_compared_as_is(catalog):
    plans, findings = _judged(catalog, _healthy(), _manual(catalog, "meta-llama/Llama-3.1-8B"))
    assert "plan_mismatch" not in codes(findings)
    [note] = [f for f in findings if f.code == "plan_renamed"]
    assert note.severity == "info" and "same architecture, compared as is" in note.title
    assert note.title.endswith("(Llama-3.1-8B-Instruct :8000)") and f"{LLAMA_8B} at http" not in note.title
    assert compared(plans, findings) == (1, 1)


def test_a_base_model_plan_still_compares_the_numbers(catalog):
    """Compared as is: an engine holding twice its weights is still a weights_mismatch."""
    _plans, findings = _judged(catalog, _healthy(used_gib=79.0), _manual(catalog, "meta-llama/Llama-3.1-8B"))
    assert "weights_mismatch" in codes(findings)


def test_16_bit_weights_by_another_name_are_the_same_format(catalog):
    fp16 = catalog.format("fp16")
    from gpumem_tui.planner.serving import engine_quantization

    method = engine_quantization(fp16, catalog.model(LLAMA_8B))
    assert method == "none"  # what `--weights fp16` asks vLLM for on a bf16 checkpoint
    _plans, findings = _judged(catalog, _healthy(), _manual(catalog, quantization=method))
    assert "plan_mismatch" not in codes(findings)


def test_a_starting_engine_is_named_by_what_it_runs_and_loads_toward_its_own_weights(catalog):
    procs = [process(2100, 9.0, name="VLLM::EngineCore", cmdline=ENGINE_CMD)]
    s = sample(gpus=[gpu(used_gib=9.0)], processes=procs, engines=[engine(state="down")])
    manual = ManualPlan(model=catalog.model("meta-llama/Llama-3.1-70B"), quantization="fp8", kv_cache_dtype="fp8", tp=2)
    _plans, findings = _judged(catalog, s, manual)
    [starting] = [f for f in findings if f.code == "engine_starting"]
    assert starting.title.startswith("engine starting on GPU 0: ")
    assert starting.title.endswith("(Llama-3.1-8B-Instruct :8000)")
    assert "of 14.99 GiB planned" in starting.title  # the 8B's bf16 weights, not the 70B's fp8 33.87 GiB


def test_headroom_is_judged_by_the_running_plan_beside_a_plan_for_something_else(catalog):
    """A plan for another split leaving less free does not make this card's low headroom 'as planned'."""
    s = _healthy(used_gib=74.15)  # 5.50 GiB free: under what the engine's own 0.9 leaves, over 5 % of the card
    _plans, findings = _judged(catalog, s, _manual(catalog, tp=2, utilization=0.95))
    [headroom] = [f for f in findings if f.code == "headroom_low"]
    assert headroom.severity == "warning" and "(as planned)" not in headroom.title
    assert "the auto plan leaves 7.42 GiB" in headroom.explanation


def test_advice_names_where_the_plan_came_from(catalog):
    for source, says, never in (
        ("command line", "--model", "planner (p)"),
        ("planner screen", "planner (p)", "--model"),
        ("scenario", "the scenario planned", "leave out --model"),
    ):
        _plans, findings = _judged(catalog, _healthy(), _manual(catalog, tp=2, source=source))
        [mismatch] = [f for f in findings if f.code == "plan_mismatch"]
        assert says in mismatch.try_this and never not in mismatch.try_this, source
