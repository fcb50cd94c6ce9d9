"""The simulated node: scenario files, a physically honest simulator, a fake NVML driver (C functions the
real pynvml binding calls) and a simulated host;
its feed (`demo.feed.DemoFeed`) and the plan a scenario was made with (`demo.plan`). It sits above the
diagnosis and below the app: it may import the planner, the catalog and the sources, never the reverse.

The names below are loaded when first asked for (`__getattr__`): the command line reads the shipped scenarios'
names (`demo.shipped`) to write its help, and `plan` must not pay for pynvml, psutil and the simulator."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpumem_tui.demo.shipped import DEFAULT_SCENARIO, scenario_names
from gpumem_tui.lazy_names import lazy_names

if TYPE_CHECKING:
    from gpumem_tui.demo.clock import ManualClock, WallClock
    from gpumem_tui.demo.engine_state import EngineState
    from gpumem_tui.demo.fake_driver import FakeDriver
    from gpumem_tui.demo.host import SimulatedHost
    from gpumem_tui.demo.node import SimulatedNode
    from gpumem_tui.demo.scenario import Scenario, ScenarioError, intro, load_scenario
    from gpumem_tui.sources.collector import Collector

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
    "node_collector",
    "scenario_names",
]
__getattr__ = lazy_names(
    __name__,
    {
        "ManualClock": "clock",
        "WallClock": "clock",
        "EngineState": "engine_state",
        "FakeDriver": "fake_driver",
        "SimulatedHost": "host",
        "SimulatedNode": "node",
        "Scenario": "scenario",
        "ScenarioError": "scenario",
        "intro": "scenario",
        "load_scenario": "scenario",
    },
)


def demo_collector(
    scenario: Scenario | str, clock: Callable[[], float] | None = None, seed: int | None = None
) -> tuple[Collector, SimulatedNode]:
    """A collector over a simulated node: the NVML source over the real binding over the fake driver, and
    the simulated host."""
    # through the package, so that a test may put another driver in its place
    from gpumem_tui.demo import SimulatedHost, SimulatedNode, load_scenario

    spec = load_scenario(scenario) if isinstance(scenario, str) else scenario
    node = SimulatedNode(spec, clock=clock, seed=seed)
    return node_collector(node, SimulatedHost(node)), node


def node_collector(node: SimulatedNode, host: SimulatedHost) -> Collector:
    """The collector of a node already built: NVML through the real binding over its fake driver, and `host`."""
    from gpumem_tui.demo import FakeDriver
    from gpumem_tui.sources.collector import Collector
    from gpumem_tui.sources.nvml import NvmlSource, bind

    nvml = NvmlSource(bind(FakeDriver(node, root=node.scenario.nvml_root)))
    return Collector(
        nvml,
        host,
        source=f"demo:{node.scenario.name}",
        hostname=node.hostname,
        clock=lambda: node.timestamp,
    )
