"""A demo opens where its story starts and says, in a first notification, what it shows and when."""

from __future__ import annotations

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.cli import build_parser
from gpumem_tui.cli.check_sources import from_demo
from gpumem_tui.cli.node_plan import build_judge
from gpumem_tui.cli.tui_cmd import build_feed
from gpumem_tui.demo import DEFAULT_SCENARIO, load_scenario, scenario_names
from gpumem_tui.diagnosis.findings import Thresholds
from tests.app.conftest import run_to, settle

STORY_SPAN_S = 600
"""Walk the whole way from the demo's start: every scenario's story lies within this."""


def _app(*argv: str) -> GpuMemApp:
    """The app exactly as `gpumem-tui ARGV` builds it, without the polling timer."""
    args = build_parser().parse_args(list(argv))
    feed = build_feed(args)
    return GpuMemApp(feed, build_judge(args), poll=False, clock=lambda: feed.node.timestamp)


async def test_the_default_demo_opens_warm_with_its_description():
    app = _app("--demo")
    scenario = load_scenario(DEFAULT_SCENARIO)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await settle(app, pilot)
        [toast] = app.screen.query("Toast")  # drawn on the screen, not only queued
        [note] = list(app._notifications)
        assert toast.display and note.timeout >= 10
        assert note.message.startswith(scenario.description + "\n")
        assert f"the story shows at {scenario.story_s:g} s" in note.message
        assert not note.markup  # a scenario's own words are shown as written
        # the first frame is already the warm node: the engine serves, nothing is loading
        assert scenario.start_s <= app.node.sample.timestamp - scenario.start_epoch < scenario.start_s + 5
        assert [e.state for e in app.node.sample.engines] == ["ok"]
        assert "engine_starting" not in {f.code for f in app.node.investigation.findings}


async def test_the_note_suggests_speed_only_when_the_story_is_far():
    app = _app("--demo", "noisy-neighbour")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        [note] = list(app._notifications)
        assert "(--speed 4 to hurry)" in note.message
    app = _app("--demo", "noisy-neighbour", "--speed", "4")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        [note] = list(app._notifications)
        assert "--speed" not in note.message and "5 s from now" in note.message


@pytest.mark.parametrize("name", scenario_names())
async def test_the_screen_at_the_story_says_what_check_says(name, make_app, catalog):
    """From the demo's first frame to its story moment, the app judges the same samples as `check --demo`
    without --at, and ends on the same findings in the same words (in check's unit: `g` switches the
    screen's): no warm-up growth shows up as a cause."""
    scenario = load_scenario(name)
    app = make_app(name, at=scenario.start_s)
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, scenario.story_s, span=STORY_SPAN_S)
        on_screen = [(f.severity, f.code, f.title) for f in app.node.investigation.findings_in("GiB")]
    checked = from_demo(name, None, None, catalog, None, Thresholds())  # `check --demo NAME`
    assert checked.where.startswith(f"simulated node '{name}' at {scenario.story_s:g} s")
    assert on_screen == [(f.severity, f.code, f.title) for f in checked.findings]
