"""The simulated fleet and `check --demo` sample their nodes in process (demo/fleet_node.py): each sample is the
one the node demo (`DemoFeed`) gives over real HTTP, its engines scraped from their mock servers by the scraper."""

from __future__ import annotations

import pytest

from gpumem_tui.cli.check_sources import demo_moments
from gpumem_tui.demo import ManualClock, load_scenario
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.demo.fleet_node import FleetNode
from gpumem_tui.demo.fleet_series import sample_at
from gpumem_tui.demo.shipped import scenario_names
from gpumem_tui.diagnosis.findings import Thresholds

OFFSETS = [float(k) for k in range(0, 151, 10)]
"""Through each scenario's start, its engines' first answers, and noisy-neighbour's engine going stale, then down."""


async def _over_http(scenario: str, offsets: list[float] = OFFSETS, seed: int | None = None) -> list[dict]:
    clock = ManualClock()
    feed = DemoFeed(scenario, clock, seed=seed)
    try:
        samples = []
        for moment in offsets:
            clock.set(moment)
            samples.append((await feed.sample()).model_dump(mode="json"))
        return samples
    finally:
        await feed.aclose()


@pytest.mark.parametrize(
    "scenario",
    [
        "busy-node",  # four engines, preemption rates
        "noisy-neighbour",  # an engine that stops serving: stale, then down
        "k8s-two-pods",  # engines in pods, found by discovery at their pods' addresses
        "container-view",  # seen from inside a container: its own pids, its GPUs from the environment
    ],
)
async def test_a_fleet_node_samples_as_the_node_demo_does_over_http(scenario):
    in_process = [sample.model_dump(mode="json") for sample in sample_at(scenario, OFFSETS)]
    over_http = await _over_http(scenario)
    assert {e["state"] for s in over_http for e in s["engines"]} >= {"ok"}
    for moment, (mine, theirs) in enumerate(zip(in_process, over_http, strict=True)):
        assert mine == theirs, f"{scenario} at {OFFSETS[moment]:.0f} s"


@pytest.mark.parametrize(("scenario", "seed"), [(name, None) for name in scenario_names()] + [("busy-node", 7)])
async def test_check_walks_each_scenario_as_the_node_demo_does_over_http(scenario, seed):
    """`check --demo` judges the in-process node at the moments it walks to the scenario's story (and with
    --seed): the samples the node demo's feed gives there over real HTTP."""
    moments = demo_moments(load_scenario(scenario), load_scenario(scenario).story_s, Thresholds().forensics_window_s)
    clock = ManualClock()
    node = FleetNode(scenario, clock, seed=seed)
    in_process = []
    for moment in moments:
        clock.set(moment)
        in_process.append(node.sample().model_dump(mode="json"))
    over_http = await _over_http(scenario, moments, seed)
    for moment, mine, theirs in zip(moments, in_process, over_http, strict=True):
        assert mine == theirs, f"{scenario} at {moment:.0f} s"


@pytest.mark.parametrize("scenario", ["busy-node", "noisy-neighbour", "kv-pressure", "tp4-70b"])
def test_the_fleet_series_values_are_what_a_scrape_of_the_engine_says(scenario):
    """The simulated fleet writes each engine's series from what the engine reports (`reports`), not from a
    parsed scrape: they are the values the scrape's records hold."""
    clock = ManualClock()
    node = FleetNode(scenario, clock)
    seen = 0
    for moment in OFFSETS:
        clock.set(moment)
        for status in node.sample().engines:
            state = node.reports[status.url]
            assert (status.state == "ok") == state.serving
            if status.state != "ok":
                continue
            (record,) = status.records
            seen += 1
            assert (record.model, record.engine_index) == (state.model, "0")
            assert record.kv_usage_fraction == state.kv_usage_fraction
            assert (record.requests_running, record.requests_waiting) == (
                state.requests_running,
                state.requests_waiting,
            )
            assert (record.preemptions_total or 0) == (state.preemptions_total or 0)
            assert (record.block_size, record.num_gpu_blocks) == (state.block_size, state.num_gpu_blocks)
            assert (record.cache_dtype or "auto", record.gpu_memory_utilization) == (
                state.cache_dtype,
                state.gpu_memory_utilization,
            )
    assert seen


def test_a_node_done_with_hands_its_copy_of_the_binding_to_the_next():
    """The fleet's nodes read one after another (fleet_series): one copy of the NVML binding serves them all."""
    first = FleetNode("healthy-8b", ManualClock())
    first.sample()
    copy = first.collector.gpu_reader.module
    first.close()
    second = FleetNode("busy-node", ManualClock())
    assert len(second.sample().gpus) == 8
    assert second.collector.gpu_reader.module is copy
