"""Each shipped scenario tells its story within seconds: it opens warm at `start_s` (unless the story is the
start), its event comes within 20 simulated seconds of that, and `story_s` lies in the same span.
Measured on the simulated node's own clock, never the wall clock."""

from __future__ import annotations

import time

import pytest

from gpumem_tui.demo import ManualClock, SimulatedNode, intro, load_scenario, scenario_names
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.demo.scenario import ScenarioError, parse_scenario

STORY_WITHIN_S = 20


def _engine(node, engine_id):
    return node.engine_state(engine_id)


EVENTS = {
    "gpu-lost": lambda node: node.gpus[2].lost,
    "kv-pressure": lambda node: (_engine(node, "llama-8b").preemptions_total or 0) > 0,
    "noisy-neighbour": lambda node: _engine(node, "llama-8b").phase == "crashed",
}
"""The moment each scenario with an event is about, as the node shows it."""


def first_second(name: str, happened) -> tuple[float, float | None]:
    """The scenario's start and the first whole second from it at which `happened(node)` holds."""
    scenario = load_scenario(name)
    clock = ManualClock(scenario.start_s)
    node = SimulatedNode(scenario, clock=clock)
    for t in range(int(scenario.start_s), int(scenario.duration_s) + 1):
        clock.set(t)
        node.sync()
        if happened(node):
            return scenario.start_s, t
    return scenario.start_s, None


@pytest.mark.parametrize("name", scenario_names())
def test_the_story_moment_is_within_twenty_seconds_of_the_start(name):
    scenario = load_scenario(name)
    assert scenario.start_s <= scenario.story_s <= scenario.start_s + STORY_WITHIN_S
    assert all(event.at_s <= scenario.start_s + STORY_WITHIN_S for event in scenario.events)


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_each_event_happens_after_the_start_and_within_twenty_seconds(name):
    start, at = first_second(name, EVENTS[name])
    assert at is not None and start < at <= start + STORY_WITHIN_S
    assert at <= load_scenario(name).story_s  # the story moment shows the event, not what comes before it


@pytest.mark.parametrize("name", scenario_names())
def test_a_demo_opens_warm(name):
    """At `start_s` every engine is serving traffic: no loading screen, no empty pool."""
    scenario = load_scenario(name)
    node = SimulatedNode(scenario, clock=ManualClock(scenario.start_s))
    for state in node.engine_states():
        assert state.phase == "ready" and state.kv_pool_tokens and state.requests_running, (name, state.id)
    assert scenario.engines or scenario.start_s == 0  # nothing to warm: the story is the start


def test_warming_up_is_cheap():
    """Stepping the busiest scenario 300 s costs a few milliseconds, so the first frame is not held up."""
    clock = ManualClock()
    node = SimulatedNode(load_scenario("busy-node"), clock=clock)
    clock.set(300)
    started = time.process_time()
    node.sync()
    assert time.process_time() - started < 0.25


def test_a_story_outside_the_scenario_is_refused_in_one_line():
    with pytest.raises(ScenarioError) as refused:
        parse_scenario('start_s = 10\nstory_s = 700\n[[gpus]]\nmodel = "h100"\n', "late.toml")
    assert str(refused.value) == "late.toml: story_s (700) must lie between start_s (10) and duration_s (600)"
    with pytest.raises(ScenarioError, match="story_s"):
        parse_scenario('start_s = 10\nstory_s = 5\n[[gpus]]\nmodel = "h100"\n')


def test_the_opening_note_says_what_and_when_and_how_to_hurry():
    scenario = load_scenario("noisy-neighbour")
    note = intro(scenario)
    wait = scenario.story_s - scenario.start_s
    assert note.startswith(scenario.description + "\n")
    assert f"opens {scenario.start_s:g} s in, warm" in note
    assert f"the story shows at {scenario.story_s:g} s, {wait:g} s from now (--speed 4 to hurry)" in note
    hurried = intro(scenario, speed=4)
    assert f"{wait / 4:.0f} s from now" in hurried and "--speed" not in hurried
    assert "opens at the start" in intro(load_scenario("idle-node"))


def test_the_opening_note_shows_a_description_literally():
    scenario = parse_scenario('description = "a\\u001b[31m red\\nline"\n[[gpus]]\nmodel = "h100"\n')
    first = intro(scenario).splitlines()[0]
    assert first == "a\\x1b[31m red\\nline"


async def test_a_running_demo_starts_where_its_story_starts():
    feed = DemoFeed.running("gpu-lost", speed=1.0)
    try:
        scenario = feed.node.scenario
        sample = await feed.sample()
        assert scenario.start_s <= sample.timestamp - scenario.start_epoch < scenario.start_s + 5
        assert all(e.state == "ok" for e in sample.engines)  # warm: every replica answers at once
        assert feed.intro == intro(scenario, 1.0)
    finally:
        await feed.aclose()
