"""The simulated node: scenario files, a physically honest simulator, a fake NVML driver (C functions the
real pynvml binding calls) and a simulated host;
its feed (`demo.feed.DemoFeed`) and the plan a scenario was made with (`demo.plan`). It sits above the
diagnosis and below the app: it may import the planner, the catalog and the sources, never the reverse."""

from __future__ import annotations

from collections.abc import Callable

from gpumem_tui.demo.clock import ManualClock, WallClock
from gpumem_tui.demo.engine_state import EngineState
from gpumem_tui.demo.fake_driver import FakeDriver
from gpumem_tui.demo.host import SimulatedHost
from gpumem_tui.demo.node import SimulatedNode
from gpumem_tui.demo.scenario import (
    DEFAULT_SCENARIO,
    Scenario,
    ScenarioError,
    intro,
    load_scenario,
    scenario_names,
)
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.nvml import NvmlSource, bind

__all__ = [
    "DEFAULT_SCENARIO",
    "EngineState",
    "FakeDriver",
    "ManualClock",
    "Scenario",
    "ScenarioError",
    "SimulatedHost",
    "SimulatedNode",
    "WallClock",
    "demo_collector",
    "intro",
    "load_scenario",
    "scenario_names",
]


def demo_collector(
    scenario: Scenario | str, clock: Callable[[], float] | None = None, seed: int | None = None
) -> tuple[Collector, SimulatedNode]:
    """A collector over a simulated node: the NVML source over the real binding over the fake driver, and
    the simulated host."""
    spec = load_scenario(scenario) if isinstance(scenario, str) else scenario
    node = SimulatedNode(spec, clock=clock, seed=seed)
    nvml = NvmlSource(bind(FakeDriver(node, root=spec.nvml_root)))
    collector = Collector(
        nvml,
        SimulatedHost(node),
        source=f"demo:{spec.name}",
        hostname=node.hostname,
        clock=lambda: node.timestamp,
    )
    return collector, node
