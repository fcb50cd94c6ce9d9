"""The simulated fleet reads a plain node's moment from the simulator's state (demo/fleet_moment.py): it is what
the node's own Collector reads through the NVML binding over the fake driver, step after step."""

from __future__ import annotations

import pytest

from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.fleet_moment import of_sample
from gpumem_tui.demo.fleet_node import FleetNode
from gpumem_tui.demo.shipped import scenario_names

OFFSETS = [float(k) for k in range(0, 181, 5)]
"""The fleet demo's step, through each scenario's start, its engines loading, serving, stopping or crashing."""
NOT_PLAIN = {"mig-node", "slurm-denied", "container-view"}
"""MIG cards, a card closed to the watcher, a view from inside a container: read through NVML at every step."""


def _walk(scenario: str, from_state: bool) -> list:
    clock = ManualClock()
    node = FleetNode(scenario, clock, scrape=False)
    moments = []
    for offset in OFFSETS:
        clock.set(offset)
        moments.append(node.moment() if from_state else of_sample(node.sample()))
    if from_state and node.plain:
        assert "collector" not in vars(node), "a plain node's moments read no NVML"
    return moments


@pytest.mark.parametrize("scenario", sorted(set(scenario_names()) - NOT_PLAIN))
def test_a_plain_node_reads_from_its_state_what_nvml_reads(scenario):
    from_state, through_nvml = _walk(scenario, True), _walk(scenario, False)
    assert all(m.gpus for m in through_nvml)
    for offset, (mine, theirs) in zip(OFFSETS, zip(from_state, through_nvml, strict=True), strict=True):
        assert mine == theirs, f"{scenario} at {offset:.0f} s"


def test_which_nodes_are_read_from_their_state():
    clock = ManualClock()
    plain = {name for name in scenario_names() if FleetNode(name, clock).plain}
    assert plain == set(scenario_names()) - NOT_PLAIN
