"""The screen says what the findings say: a loading engine is starting (its table rows are progress, not
differences), agreement is claimed only against a plan, and each engine card names its GPUs."""

from __future__ import annotations

from gpumem_tui.app.view import lay_out
from gpumem_tui.app.widgets.engine_card import EngineCard
from gpumem_tui.app.widgets.findings_panel import FindingsPanel
from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.diagnosis.findings import Finding
from gpumem_tui.diagnosis.history import History
from tests.app.conftest import run_to, settle, text_of
from tests.diagnosis.build import engine, gpu, sample


async def test_a_loading_engine_is_starting_and_its_rows_are_not_flagged(make_app):
    app = make_app("healthy-8b", at=0)
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 10, step=2, span=10)
        findings = " ".join(text_of(app.screen.query_one("#findings")).split())
        assert "engine starting on GPU 0: weights" in findings and "WARNING" not in findings
        engine = str(app.screen.query_one(EngineCard).render()).splitlines()[0]
        assert "starting: HTTP 503" in engine and " down" not in engine
        cells = {name: (diff, loud) for name, _plan, _now, diff, loud in app.screen.query_one(GpuCard).content.cells}
        assert cells["engine process"] == ("loading", False) and cells["free"] == ("loading", False)
        assert cells["other processes"][0] != "loading"  # another process at start-up is still a difference


async def test_an_idle_node_without_a_plan_does_not_claim_agreement(make_app):
    app = make_app("idle-node")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        findings = " ".join(text_of(app.screen.query_one("#findings")).split())
        assert "no plan was compared" in findings and "agrees with the plan" not in findings


async def test_a_node_that_matches_its_plan_says_so(make_app):
    app = make_app("healthy-8b", plan={"model": "meta-llama/Llama-3.1-8B-Instruct", "max_model_len": 8192})
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        assert "agrees with the plan" in " ".join(text_of(app.screen.query_one("#findings")).split())


async def test_each_engine_card_names_its_gpus(make_app):
    app = make_app("busy-node")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        titles = [str(card.render()).splitlines()[0] for card in app.screen.query(EngineCard)]
        assert [t.split("  ")[3] for t in titles] == ["GPU 0, 1", "GPU 2, 3", "GPU 4, 5", "GPU 6, 7"]


async def test_a_plan_for_another_model_is_not_agreement_on_screen(make_app):
    plan = {"model": "meta-llama/Llama-3.1-70B", "quantization": "fp8", "kv_cache_dtype": "fp8", "tp": 2}
    app = make_app("healthy-8b", plan=plan)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        findings = " ".join(text_of(app.screen.query_one("#findings")).split())
        assert "agrees with the plan" not in findings
        assert (
            "the manual plan is for another engine on GPU 0: model, weight format, KV cache dtype and split differ"
            in (findings)
        )
        # the engine card does not hold the 8B's pool against the 70B plan's tokens
        assert "vs plan" not in str(app.screen.query_one(EngineCard).render())


async def test_a_plan_for_another_split_is_one_warning_on_screen(make_app):
    plan = {"model": "meta-llama/Llama-3.1-8B-Instruct", "max_model_len": 8192, "tp": 2}
    app = make_app("healthy-8b", plan=plan)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        findings = " ".join(text_of(app.screen.query_one("#findings")).split())
        assert "split differs" in findings and "CRITICAL" not in findings
        assert "weights take about" not in findings and "smaller than planned" not in findings


async def test_an_engine_still_loading_is_not_said_to_agree_with_its_plan(make_app):
    app = make_app("healthy-8b", at=0, plan={"model": "meta-llama/Llama-3.1-8B-Instruct", "max_model_len": 8192})
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 10, step=2, span=10)
        findings = " ".join(text_of(app.screen.query_one(FindingsPanel)).split())
        assert "engine starting on GPU 0" in findings
        assert "agrees with the plan" not in findings and "still loading" in findings


async def test_the_engine_card_says_exited_when_the_findings_do(make_app):
    app = make_app("noisy-neighbour", at=0)
    async with app.run_test(size=(160, 60)) as pilot:
        await run_to(app, pilot, 290, step=10, span=290)  # 20 s after the exit: the endpoint is only stale
        assert "engine_exited" in {f.code for f in app.node.investigation.findings}
        card = str(app.screen.query_one(EngineCard).render())
    title = card.splitlines()[0]
    assert "exited" in title and "stale" not in title and "GPU 0" in title
    assert "running 10" not in card and "%" not in card  # the last record, from before the exit, is not shown
    assert "the engine has exited" in card


def test_an_exited_engine_keeps_the_gpu_its_exit_names_when_no_history_does():
    s = sample(gpus=[gpu(index=2, used_gib=1)], engines=[engine(pids=(2300,), state="stale")])
    exited = Finding(
        severity="critical",
        code="engine_exited",
        title="exited",
        explanation="",
        try_this="",
        gpu_index=2,
        endpoint=s.engines[0].url,
    )
    [shown] = lay_out(s, History(), {}, [exited]).engines
    assert shown.gpus == [2] and shown.state == "exited"
