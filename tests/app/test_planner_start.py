"""The planner starts from what runs: `p` on a node opens on the focused GPU's engine (model, weights, KV
dtype, split, context, utilization) sized for the node's card; an idle node opens on the search field; ctrl+o
(and `c` where no field takes typing) copies the plan's launch line, the one `plan --engine vllm` prints for the
same plan."""

from __future__ import annotations

import json

from gpumem_tui.app.screens.planner import PlannerScreen
from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.cli import main
from tests.app.conftest import settle, text_of
from tests.app.waiting import until


def _form(screen: PlannerScreen) -> dict[str, object]:
    return {
        name: screen.query_one(f"#{name}").value
        for name in ("gpu", "weights", "kv", "context", "users", "split", "utilization")
    }


async def _planner(app, pilot) -> PlannerScreen:
    """`p` pressed on the node screen: the planner screen it opens."""
    await pilot.press("p")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, PlannerScreen)
    return screen


async def test_p_on_a_busy_node_opens_on_the_engine_of_the_focused_gpu(make_app):
    app = make_app("busy-node")  # four Llama 3.1 70B engines, FP8 weights, two H100s each
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.screen.query_one("#gpu-6", GpuCard).focus()  # the busiest engine's GPUs: 6 and 7
        screen = await _planner(app, pilot)
        assert screen.model_id == "meta-llama/Llama-3.1-70B"
        launched = next(p for p in app.node.judged.plans if 6 in p.gpu_indices).settings
        assert _form(screen) == {
            "gpu": "H100-SXM-80GB",
            "weights": "fp8",
            "kv": "auto",
            "context": str(launched.max_model_len),
            "users": "1",
            "split": 2,
            "utilization": f"{launched.utilization:g}",
        }
        shown = " ".join(text_of(screen.query_one("#plan-view")).split())
        assert "meta-llama/Llama-3.1-70B on 2 x H100-SXM-80GB" in shown
        assert screen.focused is screen.query_one("#model-list")  # not the search: keys act on the plan


async def test_an_idle_node_opens_on_the_search_field(make_app):
    app = make_app("idle-node")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        screen = await _planner(app, pilot)
        assert screen.focused is screen.query_one("#model-search")
        await pilot.press("q", "w", "e", "n", "3", "-", "8")  # typing goes to the search
        assert screen.query_one("#model-search").value == "qwen3-8"


def _footer(app) -> str:
    return " ".join(str(key.render()) for key in app.screen.query("FooterKey"))


async def test_ctrl_o_and_c_copy_the_launch_line_that_plan_prints(make_app, capsys):
    """ctrl+o in every field; c where no field takes typing (on the model list it searches), and the footer
    shows the key that acts where the focus is."""
    app = make_app("busy-node")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot)
        screen = await _planner(app, pilot)
        form = _form(screen)
        shown = " ".join(text_of(screen.query_one("#launch-view")).split())
        assert shown.startswith("launch (ctrl+o copies it)")
        copies = []
        for field, key in (("#model-list", "ctrl+o"), ("#model-search", "ctrl+o"), ("#gpu", "c")):
            screen.query_one(field).focus()
            await until(pilot, lambda key=key: f"{'^o' if key == 'ctrl+o' else key} copy launch line" in _footer(app))
            assert f"{'^o' if key == 'ctrl+o' else key} copy launch line" in _footer(app), field
            assert key == "c" or "c copy" not in _footer(app), field  # c types there
            app._clipboard = ""  # what the key copies, not what the last one did
            await pilot.press(key)
            await pilot.pause()
            copies.append(app.clipboard)
        copied = copies[0]
        assert copied and copies == [copied] * 3 and copied in shown
        assert any(copied in str(n.message) and "copied" in str(n.message) for n in app._notifications)
    argv = ["plan", "--model", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "--weights", str(form["weights"])]
    argv += ["--context", str(form["context"]), "--users", str(form["users"]), "--gpus", str(form["split"])]
    argv += ["--utilization", str(form["utilization"]), "--engine", "vllm", "--json"]
    assert main(argv) == 0
    assert copied == json.loads(capsys.readouterr().out)["launch"]["command"]


async def test_each_gpu_opens_on_its_own_engine(make_app):
    app = make_app("k8s-two-pods")  # Llama 3.1 8B Instruct on GPU 0, Qwen2.5 7B on GPU 1
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        opened = {}
        for gpu in (1, 0):
            app.screen.query_one(f"#gpu-{gpu}", GpuCard).focus()
            await pilot.press("p")
            await pilot.pause()
            opened[gpu] = app.screen.model_id
            await pilot.press("escape")
            await pilot.pause()
        assert opened == {0: "meta-llama/Llama-3.1-8B-Instruct", 1: "Qwen/Qwen2.5-7B"}
