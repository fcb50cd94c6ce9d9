"""Feeds: where the app's samples come from. One async call gives a whole Sample, engines included.

- `LiveFeed`: NVML and the host through a Collector, plus engine endpoints given with --endpoint or
  discovered from the host's command lines, scraped over HTTP.
- `DemoFeed`: the simulated node through the same Collector and NVML source, its engines served by
  real HTTP servers on 127.0.0.1 and scraped by the same scraper.
- `ReplayFeed`: a recording played back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from gpumem_tui.models import Sample, SourceError
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.engines.discovery import discover
from gpumem_tui.sources.engines.endpoints import Endpoint, endpoint
from gpumem_tui.sources.engines.scraper import Scraper
from gpumem_tui.sources.mock import SimulatedNode, WallClock, demo_collector, intro, load_scenario
from gpumem_tui.sources.mock.engine_server import MockEngineServer
from gpumem_tui.sources.pace import Pace
from gpumem_tui.sources.replay import ReplaySource

DISCOVERY_EVERY_S = 10.0


class Feed(Protocol):
    label: str
    live: bool
    """True when samples are taken now (the header shows their age); False for a replay."""

    async def sample(self) -> Sample: ...

    async def aclose(self) -> None: ...


class LiveFeed:
    """This node: a collector, plus engines given by hand and found among the host's processes."""

    def __init__(
        self,
        collector: Collector,
        command_lines: Callable[[], list] | None,
        endpoints: list[str],
        label: str = "live",
        clock: Callable[[], float] = time.monotonic,
    ):
        self.collector, self.command_lines, self.label, self.live = collector, command_lines, label, True
        self.given = [endpoint(url) for url in endpoints]
        self.scraper = Scraper(self.given)
        self._clock, self._discovered_at = clock, float("-inf")

    async def sample(self) -> Sample:
        sample = await asyncio.to_thread(self.collector.sample)
        lines = self.command_lines
        if lines is not None and self._clock() - self._discovered_at >= DISCOVERY_EVERY_S:
            found = await asyncio.to_thread(lambda: discover(lines()))
            self._discovered_at = self._clock()
            known = {e.url for e in self.given}
            self.scraper.endpoints = self.given + [e for e in found if e.url not in known]
        if not self.scraper.endpoints:
            return sample
        return sample.model_copy(update={"engines": await self.scraper.scrape()})

    async def aclose(self) -> None:
        await self.scraper.aclose()


class DemoFeed:
    """A simulated node: the real NVML source over the fake NVML, engines behind real local servers."""

    def __init__(self, scenario: str, clock: Callable[[], float], seed: int | None = None, reachable: bool = False):
        """`reachable`: show each engine at the address its server listens on, which `gpumem-tui metrics URL`
        reaches while the feed runs (the TUI). Otherwise at the address the scenario declares, as discovery
        finds it on a real node: the same every run, for output read after the servers are gone."""
        self.collector, self.node = demo_collector(scenario, clock=clock, seed=seed)
        self.clock = clock
        self.intro: str | None = None
        """What the scenario is and when its story shows: the note the app opens with (a running demo's)."""
        self.nvml = getattr(self.collector.gpu_reader, "module", None)  # the fake NVML: inject faults into a demo
        self.label, self.live = f"demo {self.node.scenario.name}", True
        self.servers = {state.id: MockEngineServer([]).start() for state in self.node.engine_states()}
        points = [_served(self.node, server, engine_id) for engine_id, server in self.servers.items()]
        # The scraper keeps simulated time too, so preemption rates and staleness follow the scenario's clock.
        self.scraper = Scraper(points, clock=clock)
        self.shown = {} if reachable else {
            server.url: f"http://127.0.0.1:{self.node.engine_state(engine_id).port}"
            for engine_id, server in self.servers.items()}

    @classmethod
    def running(cls, scenario: str, speed: float = 1.0, seed: int | None = None, reachable: bool = False) -> DemoFeed:
        """A demo on the wall clock at `speed`, opening where the scenario's story starts (`start_s`):
        the node steps there on the first sample, a few milliseconds of simulation."""
        spec = load_scenario(scenario)
        feed = cls(scenario, WallClock(speed=speed, start_s=spec.start_s), seed=seed, reachable=reachable)
        feed.intro = intro(spec, speed)
        return feed

    def now(self) -> float:
        """The node's own time (a sample's age is measured in simulated seconds, not the wall clock's)."""
        return self.node.scenario.start_epoch + self.clock()

    def pause(self) -> None:
        getattr(self.clock, "pause", lambda: None)()

    def resume(self) -> None:
        getattr(self.clock, "resume", lambda: None)()

    async def sample(self) -> Sample:
        # The simulator steps every simulated second since the last call: off the event loop, so a demo
        # at high speed never stalls the screen.
        sample = await asyncio.to_thread(self.collector.sample)
        for engine_id, server in self.servers.items():
            server.update([self.node.engine_state(engine_id)])
        if not self.servers:
            return sample
        engines = [e.model_copy(update={"url": self.shown.get(e.url, e.url)}) for e in await self.scraper.scrape()]
        return sample.model_copy(update={"engines": engines})

    async def aclose(self) -> None:
        await self.scraper.aclose()
        for server in self.servers.values():
            server.stop()


def _served(node: SimulatedNode, server: MockEngineServer, engine_id: str) -> Endpoint:
    state = node.engine_state(engine_id)
    return endpoint(server.url, engine=state.engine, pids=tuple(state.pids))


class ReplayFeed:
    """A recording: each call gives the newest recorded sample at or before the replay position.
    Build its ReplaySource on a `Pace` to let pause hold the position."""

    def __init__(self, replay: ReplaySource, name: str, pace: Pace | None = None):
        self.replay, self.name, self.live, self.pace = replay, name, False, pace

    def pause(self) -> None:
        if self.pace:
            self.pace.pause()

    def resume(self) -> None:
        if self.pace:
            self.pace.resume()

    @property
    def label(self) -> str:
        return f"replay {self.name} at {self.replay.position:,.0f} s"

    @property
    def path(self):
        return self.replay.reader.path

    async def sample(self) -> Sample:
        """The sample at the replay position; lines of the recording skipped so far are said with it."""
        sample = await asyncio.to_thread(self.replay.sample)
        said = self.replay.warnings
        if not said:
            return sample
        more = f"{len(said)} warnings about this recording; `gpumem-tui check --replay` lists them"
        note = SourceError(source="replay", message=said[-1], hint=more if len(said) > 1 else None)
        return sample.model_copy(update={"errors": [*sample.errors, note]})

    async def aclose(self) -> None:
        return None
