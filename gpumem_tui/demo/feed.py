"""`DemoFeed`: the simulated node through the same Collector and NVML source as a live node, its engines
served by real HTTP servers on 127.0.0.1 and scraped by the same scraper. Waiting for engines works as
in `gpumem_tui.sources.feed`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from gpumem_tui.demo import SimulatedNode, WallClock, demo_collector, intro, load_scenario
from gpumem_tui.demo.engine_server import MockEngineServer
from gpumem_tui.models import Sample
from gpumem_tui.sources.engines.endpoints import Endpoint, endpoint
from gpumem_tui.sources.engines.scraper import Scraper
from gpumem_tui.sources.feed import ENGINE_WAIT_S, Feed, engine_answers


class DemoFeed(Feed):
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
        self.driver = getattr(getattr(self.collector.gpu_reader, "module", None), "nvmlLib", None)
        """The fake driver under the binding: inject faults into a demo."""
        self.name, self.live = f"demo {self.node.scenario.name}", True
        self.servers = {state.id: MockEngineServer([]).start() for state in self.node.engine_states()}
        points = [_served(self.node, server, engine_id) for engine_id, server in self.servers.items()]
        points += [endpoint(url) for url in endpoints]
        self.engine_wait_s = engine_wait_s
        # The scraper keeps simulated time too, so preemption rates and staleness follow the scenario's clock.
        self.scraper = Scraper(points, clock=clock)
        self.shown = (
            {}
            if reachable
            else {
                server.url: f"http://127.0.0.1:{self.node.engine_state(engine_id).port}"
                for engine_id, server in self.servers.items()
            }
        )

    @classmethod
    def running(
        cls,
        scenario: str,
        speed: float = 1.0,
        seed: int | None = None,
        reachable: bool = False,
        endpoints: Sequence[str] = (),
    ) -> DemoFeed:
        """A demo on the wall clock at `speed`, opening where the scenario's story starts (`start_s`):
        the node steps there on the first sample, a few milliseconds of simulation. Like a live node, its
        samples wait for the engines at most ENGINE_WAIT_S."""
        spec = load_scenario(scenario)
        feed = cls(
            scenario,
            WallClock(speed=speed, start_s=spec.start_s),
            seed=seed,
            reachable=reachable,
            engine_wait_s=ENGINE_WAIT_S,
            endpoints=endpoints,
        )
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
        answers = await engine_answers(self.scraper, self.engine_wait_s)
        engines = [e.model_copy(update={"url": self.shown.get(e.url, e.url)}) for e in answers]
        return sample.model_copy(update={"engines": engines})

    async def aclose(self) -> None:
        await self.scraper.aclose()
        for server in self.servers.values():
            server.stop()


def _served(node: SimulatedNode, server: MockEngineServer, engine_id: str) -> Endpoint:
    state = node.engine_state(engine_id)
    return endpoint(server.url, engine=state.engine, pids=tuple(state.pids))
