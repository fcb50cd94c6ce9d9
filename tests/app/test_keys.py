"""Every key of the TUI, driven through Pilot over the simulated node and its real engine servers."""

from __future__ import annotations

import json

from gpumem_tui.app.screens.details import DetailsScreen
from gpumem_tui.app.screens.help import HelpScreen
from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.app.screens.planner import PlannerScreen
from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.app.widgets.process_table import ProcessTable
from tests.app.conftest import refresh, settle, text_of

PLAN_8B = {"model": "meta-llama/Llama-3.1-8B-Instruct", "max_model_len": 8192}


def card(app, index=0) -> str:
    return str(app.screen.query_one(f"#gpu-{index}", GpuCard).render())


def title(app, index=0) -> str:
    return card(app, index).splitlines()[0]


async def test_first_frame_shows_gpu_engine_and_process(make_app):
    app = make_app("healthy-8b", plan=PLAN_8B)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, MainScreen)
        assert "GPU 0 18:00.0 H100 80GB HBM3" in title(app) and "/ 85.5 GB" in title(app)
        engine = str(app.screen.query_one("EngineCard").render()).splitlines()[0]
        assert "meta-llama/Llama-3.1-8B-Instruct" in engine and " ok" in engine
        assert app.screen.query_one(ProcessTable).row_count == 1
        assert "\nmanual " in card(app)


async def test_q_quits(make_app):
    app = make_app("idle-node")
    async with app.run_test() as pilot:
        await settle(app, pilot)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_help_opens_with_question_mark_and_h(make_app):
    app = make_app("idle-node")
    async with app.run_test() as pilot:
        await settle(app, pilot)
        for key in ("question_mark", "h"):
            await pilot.press(key)
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            assert isinstance(app.screen, MainScreen)


async def test_g_switches_gb_and_gib(make_app):
    app = make_app("healthy-8b")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert "/ 85.5 GB" in title(app)
        await pilot.press("g")
        await pilot.pause()
        assert "/ 79.6 GiB" in title(app)


async def test_space_pauses_refreshes(make_app):
    app = make_app("kv-pressure", at=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first = app.node.sample.timestamp
        await pilot.press("space")
        app.demo_clock.set(200)
        await refresh(app, pilot)
        assert app.node.paused and app.node.sample.timestamp == first
        assert "PAUSED" in str(app.screen.query_one("#header").render())
        await pilot.press("space")
        await refresh(app, pilot)
        assert app.node.sample.timestamp == first + 140


async def test_s_cycles_the_process_sort(make_app):
    app = make_app("noisy-neighbour", at=48)  # the engine and the notebook: two rows to sort
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(ProcessTable)
        assert table.sort_by == "GPU memory"
        pids = [table.get_row_at(i)[0].plain for i in range(table.row_count)]
        await pilot.press("s")
        await pilot.pause()
        assert table.sort_by == "pid"
        assert [table.get_row_at(i)[0].plain for i in range(table.row_count)] == sorted(pids, key=int)


async def test_plus_and_minus_change_the_interval(make_app):
    app = make_app("idle-node")
    async with app.run_test() as pilot:
        await settle(app, pilot)
        await pilot.press("minus")
        assert app.node.interval_s == 2.0
        await pilot.press("plus")
        await pilot.press("plus")
        assert app.node.interval_s == 0.5


async def test_r_records_samples_to_a_replayable_file(make_app, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = make_app("healthy-8b", at=100)
    async with app.run_test() as pilot:
        await settle(app, pilot)
        await pilot.press("r")
        assert app.node.recorder is not None
        for t in (110, 120):
            app.demo_clock.set(t)
            await refresh(app, pilot)
        await pilot.press("r")
        assert app.node.recorder is None
    [path] = list(tmp_path.glob("gpumem-*.jsonl"))
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["format"] and len(lines) == 3


async def test_tab_focuses_and_enter_shows_details(make_app):
    app = make_app("tp4-70b")
    async with app.run_test(size=(120, 90)) as pilot:  # tall enough for four full cards
        await settle(app, pilot)
        app.screen.query_one("#gpu-2", GpuCard).focus()
        await pilot.press("enter")
        assert isinstance(app.screen, DetailsScreen)
        assert "GPU 2" in text_of(app.screen.query_one("#details-text"))
        await pilot.press("escape")
        app.screen.query_one(ProcessTable).focus()
        await pilot.press("enter")
        assert "Process 2100" in text_of(app.screen.query_one("#details-text"))
        await pilot.press("escape")
        await pilot.press("tab")
        assert app.focused is not None


async def test_planner_recomputes_and_applies_to_the_overlay(make_app):
    app = make_app("tp4-70b")
    async with app.run_test(size=(120, 90)) as pilot:  # tall enough for four full cards
        await settle(app, pilot)
        assert "\nmanual " not in card(app)
        await pilot.press("p")
        assert isinstance(app.screen, PlannerScreen)
        await pilot.click("#model-search")
        await pilot.press(*"llama-3.1-70b")
        await pilot.pause()
        assert "meta-llama/Llama-3.1-70B" in text_of(app.screen.query_one("#plan-view"))
        assert "Fits on" in text_of(app.screen.query_one("#plan-view"))
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert isinstance(app.screen, MainScreen) and app.node.judge.plan.model.id == "meta-llama/Llama-3.1-70B"
        assert all("\nmanual " in card(app, i) for i in range(4))


async def test_planner_applies_a_4_bit_plan_as_the_engine_would_load_it(make_app):
    app = make_app("healthy-8b")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("p")
        app.screen.query_one("#weights").value = "int4"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert app.node.judge.plan.quantization == "w4a16"


async def test_the_light_theme_recolours_the_screen(catalog):
    from gpumem_tui.app.app import GpuMemApp
    from gpumem_tui.demo import ManualClock
    from gpumem_tui.demo.feed import DemoFeed
    from gpumem_tui.diagnosis.judge import Judge

    feed = DemoFeed("healthy-8b", ManualClock(300))
    app = GpuMemApp(feed, Judge(catalog), poll=False, theme="textual-light", clock=lambda: feed.node.timestamp)
    async with app.run_test() as pilot:
        await settle(app, pilot)
        assert app.theme == "textual-light" and not app.current_theme.dark


async def test_the_planner_reads_a_config_path(make_app, tmp_path):
    import json

    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 4096,
                "intermediate_size": 14336,
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "vocab_size": 128256,
                "_name_or_path": "lab/my-8b",
            }
        )
    )
    app = make_app("healthy-8b")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("p")
        # The form scrolls: with the catalog's models listed above it, the field may start below the screen.
        app.screen.query_one("#config-path").scroll_visible(animate=False)
        await pilot.pause()
        await pilot.click("#config-path")
        await pilot.press(*str(tmp_path / "nope"))
        await pilot.pause()
        assert "Cannot plan yet" in text_of(app.screen.query_one("#plan-view"))
        app.screen.query_one("#config-path").value = str(tmp_path / "config.json")  # the file: its own name
        await pilot.pause()
        assert "lab/my-8b" in text_of(app.screen.query_one("#plan-view"))
        app.screen.query_one("#config-path").value = str(tmp_path)  # its directory, no weights in it: one name
        await pilot.pause()
        assert "lab/my-8b" in text_of(app.screen.query_one("#plan-view"))
        (tmp_path / "model.safetensors").write_bytes(b"\x02" + bytes(7) + b"{}")  # weights: served, named by the path
        app.screen.query_one("#config-path").value = str(tmp_path / "config.json")
        await pilot.pause()
        assert f"{tmp_path}on1x" in "".join(text_of(app.screen.query_one("#plan-view")).split())  # wrapped


async def test_a_demo_sample_age_is_counted_in_the_node_s_own_time(catalog):
    """The simulated node lives in 2026-01-01: its age is simulated seconds since the sample, not the
    wall clock's distance to that date."""
    import time

    from gpumem_tui.app.app import GpuMemApp
    from gpumem_tui.demo import ManualClock
    from gpumem_tui.demo.feed import DemoFeed
    from gpumem_tui.diagnosis.judge import Judge

    clock = ManualClock(300)
    feed = DemoFeed("healthy-8b", clock)
    app = GpuMemApp(feed, Judge(catalog), poll=False, clock=time.time)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot)
        clock.set(304.5)
        app.node_screen.redraw()
        await pilot.pause()
        assert "age 4 s" in str(app.screen.query_one("#header").render())


async def test_the_footer_says_what_plus_and_minus_do(make_app):
    app = make_app("idle-node")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        said = {key: binding.description for key, binding in ((b.key, b) for b in MainScreen.BINDINGS)}
        assert said["plus,equals_sign"] == "faster" and said["minus"] == "slower"
        footer = " ".join(str(w.render()) for w in app.screen.query("FooterKey"))
        assert "+ faster" in footer and "- slower" in footer
        before = app.node.interval_s
        await pilot.press("plus")
        assert app.node.interval_s < before


async def test_the_focused_gpu_card_has_an_accent_edge_that_moves_nothing(make_app):
    from textual.color import Color

    app = make_app("tp4-70b")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first, second = (app.screen.query_one(f"#gpu-{i}", GpuCard) for i in (0, 1))
        width = second.content_region.width
        first.focus()
        await pilot.pause()
        edge, colour = first.styles.border_left
        assert edge == "thick" and colour == Color.parse(app.theme_variables["accent"])
        assert second.styles.border_left[0] in ("blank", "") and second.content_region.width == width
        assert first.content_region.width == width
