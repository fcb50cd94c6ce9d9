"""Shared builders: a simulated node from TOML text, the fake NVML driver over it, the real pynvml binding
over that driver, and the NVML source over the binding."""

from __future__ import annotations

import pytest

from gpumem_tui.demo import FakeDriver, ManualClock, SimulatedNode
from gpumem_tui.demo.fake_driver import DRIVER_VERSION
from gpumem_tui.demo.scenario import parse_scenario
from gpumem_tui.sources.nvml import NvmlSource, bind

ONE_H100_ENGINE = """
[[gpus]]
model = "h100"
count = 2

[[engines]]
id = "llama"
model = "llama-3.1-8b"
gpus = [0]

[[events]]
at_s = 0
kind = "traffic"
engine = "llama"
rate = 2.0
"""


class Rig:
    """A node at a chosen second, the fake driver over it (a driver `version`, called as root or not), the
    real binding over the driver, and the NVML source over the binding."""

    def __init__(self, toml: str, at: float = 60, version: str = DRIVER_VERSION, root: bool = True):
        self.clock = ManualClock()
        self.node = SimulatedNode(parse_scenario(toml), clock=self.clock)
        self.driver = FakeDriver(self.node, version, root=root)
        self.binding = bind(self.driver)
        self.source = NvmlSource(self.binding)
        self.clock.set(at)

    def fresh_source(self) -> NvmlSource:
        """Another source over a new copy of the binding on the same driver (nothing cached)."""
        return NvmlSource(bind(self.driver))


@pytest.fixture
def rig():
    made = Rig(ONE_H100_ENGINE)
    yield made
    assert made.driver.crashes == []


@pytest.fixture
def make_rig():
    """Rig(toml, at, version, root) for a test's own node; `make_rig.base` is the two-H100, one-engine node.
    Every rig made is checked afterwards: the fake driver itself never failed."""
    made: list[Rig] = []

    def make(toml: str = ONE_H100_ENGINE, at: float = 60, version: str = DRIVER_VERSION, root: bool = True) -> Rig:
        made.append(Rig(toml, at, version, root))
        return made[-1]

    make.base = ONE_H100_ENGINE
    yield make
    assert [crash for each in made for crash in each.driver.crashes] == []
