"""No input typed in the planner ends the app: a quantized config.json, a path that is not one and odd numbers
are planned or said in the planner; the fit table is never another model's; typing on the model list searches,
as its label says."""

from __future__ import annotations

import json

from gpumem_tui.app.screens.planner import PlannerScreen
from tests.app.conftest import settle, text_of
from tests.configs import SMALL_LLAMA

AWQ = dict(SMALL_LLAMA, quantization_config={"quant_method": "awq", "bits": 4, "group_size": 128})


async def _planner(app, pilot) -> PlannerScreen:
    await pilot.press("p")
    await pilot.pause()
    assert isinstance(app.screen, PlannerScreen)
    return app.screen


async def _type(pilot, field, text: str) -> None:
    """Clear the field, then type `text` into it key by key, as a user does."""
    field.focus()
    field.value = ""
    await pilot.press(*("full_stop" if ch == "." else ch for ch in text))
    await pilot.pause()


async def test_an_awq_config_typed_in_the_config_field_is_planned(make_app, tmp_path):
    (tmp_path / "awq-8b").mkdir()
    (tmp_path / "awq-8b" / "config.json").write_text(json.dumps(AWQ))
    app = make_app("busy-node")
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(app, pilot)
        screen = await _planner(app, pilot)
        await pilot.press("shift+tab", "tab", "tab")  # from the model list: search, list, then the config field
        assert screen.focused is screen.query_one("#config-path")
        await _type(pilot, screen.query_one("#config-path"), str(tmp_path / "awq-8b" / "config.json"))
        assert app.screen is screen and app.is_running
        assert "awq-8b on " in text_of(screen.query_one("#plan-view"))
        assert "int4" in text_of(screen.query_one("#fit-view"))


async def test_a_bad_config_path_clears_the_last_models_fit_table(make_app, tmp_path):
    app = make_app("busy-node")
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(app, pilot)
        screen = await _planner(app, pilot)
        assert "bf16" in text_of(screen.query_one("#fit-view"))  # the engine's model, planned
        await _type(pilot, screen.query_one("#config-path"), str(tmp_path / "nothing-here"))
        assert "Cannot plan yet" in text_of(screen.query_one("#plan-view"))
        assert text_of(screen.query_one("#fit-view")).strip() == ""
        assert text_of(screen.query_one("#launch-view")).strip() == ""


async def test_odd_numbers_in_the_form_are_said_not_fatal(make_app):
    app = make_app("busy-node")
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(app, pilot)
        screen = await _planner(app, pilot)
        for field, text in [("context", "0"), ("users", "0"), ("context", "9" * 30), ("utilization", "0")]:
            await _type(pilot, screen.query_one(f"#{field}"), text)
            assert app.screen is screen and app.is_running, (field, text)


async def test_typing_on_the_model_list_searches(make_app):
    app = make_app("busy-node")  # opens on the engine's plan, the model list focused
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(app, pilot)
        screen = await _planner(app, pilot)
        assert screen.focused is screen.query_one("#model-list")
        await pilot.press("q", "w", "e", "n")
        await pilot.pause()
        assert screen.query_one("#model-search").value == "qwen"
        assert screen.focused is screen.query_one("#model-search")  # the rest of the name goes there too
        assert "qwen" in screen.model_id.lower()
        assert "qwen" in text_of(screen.query_one("#plan-view")).lower()


def _letter_keys(screen: PlannerScreen) -> list[str]:
    """The keys the planner binds that type a character: each is one a search could take."""
    keys = {key for binding in screen.BINDINGS for key in binding.key.split(",")}
    return sorted(key for key in keys if len(key) == 1 and key.isprintable())


async def test_every_letter_typed_on_the_model_list_searches(make_app):
    """`c` copies the launch line elsewhere; on the model list it is the first letter of "codellama"."""
    app = make_app("busy-node")  # opens on the engine's plan, the model list focused
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(app, pilot)
        screen = await _planner(app, pilot)
        search, models = screen.query_one("#model-search"), screen.query_one("#model-list")
        letters = _letter_keys(screen)
        assert "c" in letters  # the screen's own letter: what the list must not lose to it
        for letter in letters:
            search.value = ""
            models.focus()
            await pilot.press(letter)
            await pilot.pause()
            assert search.value == letter and screen.focused is search, letter
        search.value = ""
        models.focus()
        await pilot.press(*"codellama")
        await pilot.pause()
        assert search.value == "codellama"
        assert "codellama" in screen.model_id.lower()
        assert app.clipboard == "" and not app._notifications  # nothing copied on the way
