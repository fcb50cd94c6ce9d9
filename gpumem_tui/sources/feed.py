"""Feeds: where the app's samples come from. One async call gives a whole Sample, engines included.

- `LiveFeed`: NVML and the host through a Collector, plus engine endpoints given with --endpoint or
  discovered from the host's command lines, scraped over HTTP.
- `DemoFeed`: the simulated node through the same Collector and NVML source, its engines served by
  real HTTP servers on 127.0.0.1 and scraped by the same scraper.
- `ReplayFeed`: a recording played back.

Engines never hold up the GPU read: their polls run as the scraper's own tasks, and a sample waits at
most `engine_wait_s` for the polls it started (None: for every poll until it ends, for one-shot commands
and stepped demos), then takes the newest answer of each endpoint; a slow one shows its last answer,
then stale, and is not waited for again while its poll is out.
The first sample waits up to FIRST_WAIT_S, so a first frame does not call a healthy engine down.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from gpumem_tui.models import Sample, SourceError
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.engines.discovery import Discovery, survey
from gpumem_tui.sources.engines.endpoints import Endpoint, endpoint
from gpumem_tui.sources.engines.scraper import Scraper
from gpumem_tui.sources.host import own_addresses
from gpumem_tui.sources.mock import SimulatedNode, WallClock, demo_collector, intro, load_scenario
from gpumem_tui.sources.mock.engine_server import MockEngineServer
from gpumem_tui.sources.pace import Pace
from gpumem_tui.sources.replay import ReplaySource

DISCOVERY_EVERY_S = 10.0
ENGINE_WAIT_S = 0.1
"""How long a running screen's sample waits for engine answers still out, after the GPU read."""
FIRST_WAIT_S = 1.0
"""How long the first sample waits for the engines' first answers."""


class Feed(Protocol):
    @property
    def label(self) -> str: ...

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
        engine_wait_s: float | None = ENGINE_WAIT_S,
        addresses: Callable[[], Iterable[str]] = own_addresses,
    ):
        """`engine_wait_s`: see the module's docstring; `addresses`: this node's own, where discovery may
        probe (endpoints given by hand are probed wherever they are)."""
        self.collector, self.command_lines, self.label, self.live = collector, command_lines, label, True
        self.given = [endpoint(url) for url in endpoints]
        self.scraper = Scraper(self.given)
        self.engine_wait_s, self.addresses = engine_wait_s, addresses
        self._clock, self._discovered_at = clock, float("-inf")
        self._notes: list[SourceError] = []

    async def sample(self) -> Sample:
        self.scraper.poll()  # the engines answer while the GPUs are read
        sample, found = await asyncio.gather(asyncio.to_thread(self.collector.sample), self._discover())
        if found is not None:
            known = {e.url for e in self.given}
            self.scraper.endpoints = self.given + [e for e in found.endpoints if e.url not in known]
        engines = await _answers(self.scraper, self.engine_wait_s)  # also lets go of endpoints gone
        return sample.model_copy(update={"engines": engines, "errors": [*sample.errors, *self._notes]})

    async def _discover(self) -> Discovery | None:
        """Engines among the host's processes, every DISCOVERY_EVERY_S; None when not due. Never raises:
        a failure is a note and the endpoints found before stay."""
        lines = self.command_lines
        if lines is None or self._clock() - self._discovered_at < DISCOVERY_EVERY_S:
            return None
        self._discovered_at = self._clock()
        try:
            found = await asyncio.to_thread(lambda: survey(lines(), set(self.addresses())))
        except Exception as exc:  # noqa: BLE001 - discovery is a convenience; the GPUs and --endpoint go on
            failed = f"engine discovery failed: {type(exc).__name__}: {exc}"
            self._notes = [SourceError(source="discovery", message=failed)]
            return None
        self._notes = [SourceError(source="discovery", message=note) for note in found.notes]
        return found

    async def aclose(self) -> None:
        await self.scraper.aclose()


class DemoFeed:
    """A simulated node: the real NVML source over the fake NVML, engines behind real local servers."""

    def __init__(
        self,
        scenario: str,
        clock: Callable[[], float],
        seed: int | None = None,
        reachable: bool = False,
        engine_wait_s: float | None = None,
        endpoints: Sequence[str] = (),
    ):
        """`reachable`: show each engine at the address its server listens on, which `gpumem-tui metrics URL`
        reaches while the feed runs (the TUI). Otherwise at the address the scenario declares, as discovery
        finds it on a real node: the same every run, for output read after the servers are gone.
        `engine_wait_s`: see the module's docstring (None by default: a stepped demo waits for its engines);
        `endpoints`: real endpoints scraped beside the simulated engines."""
        self.collector, self.node = demo_collector(scenario, clock=clock, seed=seed)
        self.clock = clock
        self.intro: str | None = None
        """What the scenario is and when its story shows: the note the app opens with (a running demo's)."""
        self.nvml = getattr(self.collector.gpu_reader, "module", None)  # the fake NVML: inject faults into a demo
        self.label, self.live = f"demo {self.node.scenario.name}", True
        self.servers = {state.id: MockEngineServer([]).start() for state in self.node.engine_states()}
        points = [_served(self.node, server, engine_id) for engine_id, server in self.servers.items()]
        points += [endpoint(url) for url in endpoints]
        self.engine_wait_s = engine_wait_s
        # The scraper keeps simulated time too, so preemption rates and staleness follow the scenario's clock.
        self.scraper = Scraper(points, clock=clock)
        self.shown = {} if reachable else {
            server.url: f"http://127.0.0.1:{self.node.engine_state(engine_id).port}"
            for engine_id, server in self.servers.items()}

    @classmethod
    def running(
        cls, scenario: str, speed: float = 1.0, seed: int | None = None, reachable: bool = False,
        endpoints: Sequence[str] = (),
    ) -> DemoFeed:
        """A demo on the wall clock at `speed`, opening where the scenario's story starts (`start_s`):
        the node steps there on the first sample, a few milliseconds of simulation. Like a live node, its
        samples wait for the engines at most ENGINE_WAIT_S."""
        spec = load_scenario(scenario)
        feed = cls(scenario, WallClock(speed=speed, start_s=spec.start_s), seed=seed, reachable=reachable,
                   engine_wait_s=ENGINE_WAIT_S, endpoints=endpoints)
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
        if not self.scraper.endpoints:
            return sample
        answers = await _answers(self.scraper, self.engine_wait_s)
        engines = [e.model_copy(update={"url": self.shown.get(e.url, e.url)}) for e in answers]
        return sample.model_copy(update={"engines": engines})

    async def aclose(self) -> None:
        await self.scraper.aclose()
        for server in self.servers.values():
            server.stop()


async def _answers(scraper: Scraper, wait_s: float | None) -> list:
    """Every endpoint's newest answer, waiting `wait_s` at most (FIRST_WAIT_S the first time)."""
    first = scraper.looks == 0
    return await scraper.latest(max(wait_s, FIRST_WAIT_S) if first and wait_s is not None else wait_s)


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
