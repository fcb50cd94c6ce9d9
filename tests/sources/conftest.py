"""Shared builders: a simulated node from TOML text, and the real NVML source over its fake NVML."""

from __future__ import annotations

import pytest

from gpumem_tui.demo import FakeNvml, ManualClock, SimulatedNode
from gpumem_tui.demo.scenario import parse_scenario
from gpumem_tui.sources.nvml import NvmlSource, real_module

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
    """A node at a chosen second, the fake NVML over it, and the real NVML source over the fake."""

    def __init__(self, toml: str, at: float = 60):
        self.clock = ManualClock()
        self.node = SimulatedNode(parse_scenario(toml), clock=self.clock)
        self.fake = FakeNvml(self.node, real_module())
        self.source = NvmlSource(self.fake)
        self.clock.set(at)


@pytest.fixture
def pynvml():
    return real_module()


@pytest.fixture
def rig() -> Rig:
    return Rig(ONE_H100_ENGINE)


@pytest.fixture
def make_rig():
    """Rig(toml, at) for a test's own node; `make_rig.base` is the two-H100, one-engine node."""

    def make(toml: str = ONE_H100_ENGINE, at: float = 60) -> Rig:
        return Rig(toml, at)

    make.base = ONE_H100_ENGINE
    return make
