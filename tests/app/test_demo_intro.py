"""A demo opens where its story starts and says, in a first notification, what it shows and when."""

from __future__ import annotations

from gpumem_tui.app import GpuMemApp
from gpumem_tui.cli import build_parser
from gpumem_tui.cli.tui_cmd import build_feed, build_judge
from gpumem_tui.sources.mock import DEFAULT_SCENARIO, load_scenario
from tests.app.conftest import settle


def _app(*argv: str) -> GpuMemApp:
    """The app exactly as `gpumem-tui ARGV` builds it, without the polling timer."""
    args = build_parser().parse_args(list(argv))
    feed = build_feed(args)
    return GpuMemApp(feed, build_judge(args), poll=False, clock=lambda: feed.node.timestamp)


async def test_the_default_demo_opens_warm_with_its_description():
    app = _app("--demo")
    scenario = load_scenario(DEFAULT_SCENARIO)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        [note] = list(app._notifications)
        assert note.message.startswith(scenario.description + "\n")
        assert f"the story shows at {scenario.story_s:g} s" in note.message
        assert not note.markup  # a scenario's own words are shown as written
        # the first frame is already the warm node: the engine serves, nothing is loading
        assert scenario.start_s <= app.sample.timestamp - scenario.start_epoch < scenario.start_s + 5
        assert [e.state for e in app.sample.engines] == ["ok"]
        assert "engine_starting" not in {f.code for f in app.watch.findings}


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
