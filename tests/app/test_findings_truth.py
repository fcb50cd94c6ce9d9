"""The screen says what the findings say: a loading engine is starting (its table rows are progress, not
differences), agreement is claimed only against a plan, and each engine card names its GPUs."""

from __future__ import annotations

from gpumem_tui.app.widgets.engine_card import EngineCard
from gpumem_tui.app.widgets.gpu_card import GpuCard
from tests.app.conftest import run_to, settle, text_of


async def test_a_loading_engine_is_starting_and_its_rows_are_not_flagged(make_app):
    app = make_app("healthy-8b", at=0)
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 10, step=2, span=10)
        findings = " ".join(text_of(app.screen.query_one("#findings")).split())
        assert "is starting: weights" in findings and "WARNING" not in findings
        engine = str(app.screen.query_one(EngineCard).render()).splitlines()[0]
        assert "starting: HTTP 503" in engine and " down" not in engine
        cells = {name: (diff, loud) for name, _plan, _now, diff, loud in app.screen.query_one(GpuCard).content[4]}
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
        assert "is not what the manual plan is for: model, weight format, KV cache dtype and split differ" in findings
