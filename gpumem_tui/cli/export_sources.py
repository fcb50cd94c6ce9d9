"""Where `export` gets its samples: a simulated node or a recording on a clock the exporter moves (each
refresh `step_s` simulated or recorded seconds after the one before, so a test knows the moment of every
refresh), or this node (NVML, the host and its engines, as the TUI reads them)."""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import AsyncIterator

from gpumem_tui.cli.check_sources import demo_moments
from gpumem_tui.cli.errors import NoSourceError
from gpumem_tui.demo import ManualClock, load_scenario
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.models import Sample
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.feed import Feed, LiveFeed, ReplayFeed
from gpumem_tui.sources.host import HostSource
from gpumem_tui.sources.nvml import NvmlSource, NvmlUnavailable
from gpumem_tui.sources.replay import RecordingReader, ReplaySource


def node_name() -> str | None:
    """NODE_NAME when set (dcgm-exporter's Helm chart sets it from the downward API): the node's name."""
    return os.environ.get("NODE_NAME") or None


class Stepped(Feed):
    """A feed on a clock the exporter moves. Its samples carry NODE_NAME as their host name when it is set,
    as a live node's do, so several simulated or recorded nodes make several nodes of one fleet."""

    named: str | None = None

    @abstractmethod
    def lead_in(self) -> AsyncIterator[Sample]:
        """The samples judged before the first refresh: the walk `check` makes to the same moment."""

    def as_node(self, sample: Sample) -> Sample:
        return sample if self.named is None else sample.model_copy(update={"hostname": self.named})


class SteppedDemo(Stepped):
    """A simulated node: the first refresh at `at` seconds into the scenario, each next `step_s` later."""

    def __init__(self, named: str, at: float, step_s: float, history_s: float, seed: int | None = None):
        """`named`: a shipped scenario's name or a scenario file."""
        self.moments = demo_moments(load_scenario(named), at, history_s)
        self.clock = ManualClock(self.moments[0])
        self.demo = DemoFeed(named, self.clock, seed=seed)
        self.name, self.live = self.demo.name, True
        self.next_s, self.step_s = at, step_s
        self.named = node_name()

    async def lead_in(self) -> AsyncIterator[Sample]:
        for moment in self.moments[:-1]:
            self.clock.set(moment)
            yield self.as_node(await self.demo.sample())

    async def sample(self) -> Sample:
        self.clock.set(self.next_s)
        self.next_s += self.step_s
        return self.as_node(await self.demo.sample())

    def now(self) -> float:
        return self.demo.now()

    async def aclose(self) -> None:
        await self.demo.aclose()


class SteppedReplay(Stepped):
    """A recording: the first refresh is its newest sample at or before `at` seconds in, each next
    `step_s` recorded seconds later; once it ends, the last sample stays (as the TUI's replay)."""

    def __init__(self, path: str, at: float, step_s: float):
        self.clock = ManualClock()
        self.feed = ReplayFeed(ReplaySource(path, clock=self.clock, start_at=at), path)
        self.name, self.live = self.feed.name, False
        self.at, self.step_s = at, step_s
        self.named = node_name()

    async def lead_in(self) -> AsyncIterator[Sample]:
        """Every sample before the first refresh's, as `check --replay --at` walks them."""
        held, first = None, None
        for sample in RecordingReader(self.feed.path):
            first = sample.timestamp if first is None else first
            if sample.timestamp - first > self.at:
                break
            if held is not None:
                yield self.as_node(held)
            held = sample

    async def sample(self) -> Sample:
        sample = await self.feed.sample()
        self.clock.advance(self.step_s)
        return self.as_node(sample)


def live_feed(endpoints: list[str]) -> tuple[LiveFeed, NvmlSource]:
    """This node as the TUI reads it. NVML must start now (else exit 3); a failure later is a refresh's.
    `Hostname` is NODE_NAME when set, as dcgm-exporter names a Kubernetes node, else the host name."""
    nvml, host = NvmlSource(), HostSource()
    try:
        nvml.open()
    except NvmlUnavailable as exc:
        raise NoSourceError(f"{exc} (see `gpumem-tui export --help`)") from None
    collector = Collector(nvml, host, source="nvml", hostname=node_name())
    return LiveFeed(collector, host.command_lines, endpoints, look=host.proc.whereabouts), nvml
