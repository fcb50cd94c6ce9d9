"""The planner screen answers as `plan --engine vllm` does: the same split, pool and fit cell, and it
applies that split to the overlay."""

from __future__ import annotations

import json

from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.app.screens.planner import FIT_GPUS, PlannerScreen
from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.cli import main
from tests.app.conftest import settle, text_of


async def test_the_planner_screen_shows_and_applies_what_plan_prints(make_app, capsys, catalog):
    assert (
        main(
            [
                "plan",
                "--model",
                "llama-3.1-70b",
                "--gpu",
                "h200",
                "--weights",
                "fp8",
                "--kv-dtype",
                "fp8",
                "--context",
                "8192",
                "--users",
                "80",
                "--engine",
                "vllm",
                "--json",
            ]
        )
        == 0
    )
    plan = json.loads(capsys.readouterr().out)
    app = make_app("idle-node")
    async with app.run_test(size=(160, 160)) as pilot:  # tall enough for eight full cards
        await settle(app, pilot)
        await pilot.press("p")
        screen = app.screen
        assert isinstance(screen, PlannerScreen)
        screen.model_id = "meta-llama/Llama-3.1-70B"
        screen.query_one("#gpu").value = catalog.gpu("h200").key
        screen.query_one("#weights").value = "fp8"
        screen.query_one("#kv").value = "fp8"
        screen.query_one("#users").value = "80"
        await pilot.pause()
        shown = text_of(screen.query_one("#plan-view"))
        assert f"on {plan['gpus']} x H200-SXM-141GB" in shown
        assert f"its KV pool holds {plan['kv_pool_tokens']:,} tokens" in shown
        fp8_row = next(
            line for line in text_of(screen.query_one("#fit-view")).splitlines() if line.strip().startswith("fp8")
        )
        assert fp8_row.split()[1 + FIT_GPUS.index("h200")].rstrip("*") == str(plan["gpus"])
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert isinstance(app.screen, MainScreen) and app.node.judge.plan.tp == plan["gpus"]
        drawn = [i for i in range(8) if "\nmanual " in str(app.screen.query_one(f"#gpu-{i}", GpuCard).render())]
        assert drawn == list(range(plan["gpus"]))
        # the plan drawn is the plan the screen showed, on the node's own card: nothing to say about it
        assert app.node.investigation.plans[0].prediction.kv_cache_bytes == plan["engine"]["kv_cache_bytes"]
        assert "plan_mismatch" not in {f.code for f in app.node.investigation.findings}


async def test_the_planner_starts_on_the_nodes_own_card_and_a_plan_for_another_says_so(make_app, catalog):
    app = make_app("idle-node")  # 8 x H200
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("p")
        assert app.screen.query_one("#gpu").value == app.node.node_gpu() == "H200-SXM-141GB"
        app.screen.query_one("#gpu").value = "H100-SXM-80GB"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert app.node.investigation.plans[0].settings.gpu.key == "H100-SXM-80GB"  # sized as the planner showed it
        mismatch = [f for f in app.node.investigation.findings if f.code == "plan_mismatch"]
        assert mismatch and "sized for H100-SXM-80GB, not this node's H200-SXM-141GB" in mismatch[0].title
    screen = PlannerScreen(catalog, lambda _plan: None, None, node_gpu=catalog.gpu("a100-80gb").key)
    assert screen.gpu_key == catalog.gpu("a100-80gb").key


async def test_the_planner_screen_plans_each_format_as_the_command_line_does(make_app, catalog):
    from gpumem_tui.cli import build_parser
    from gpumem_tui.cli.node_plan import manual_plan

    app = make_app("idle-node")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        for name in sorted(catalog.formats):
            await pilot.press("p")
            screen = app.screen
            assert isinstance(screen, PlannerScreen)
            screen.model_id = "openai/gpt-oss-20b"  # an MXFP4 checkpoint: 16-bit weights are `none`, not None
            screen.query_one("#weights").value = name
            await pilot.pause()
            await pilot.press("ctrl+s")
            await settle(app, pilot)
            assert isinstance(app.screen, MainScreen)  # applied: the inputs were whole
            cli = manual_plan(build_parser().parse_args(["--model", "openai/gpt-oss-20b", "--weights", name]), catalog)
            assert (name, app.node.judge.plan.quantization) == (name, cli.quantization)
