"""`DemoFeed`: the simulated node through the same Collector and NVML source as a live node, its engines
served by real HTTP servers on 127.0.0.1 and scraped by the same scraper. Waiting for engines works as
in `gpumem_tui.sources.feed`.

A scenario with engines in pods (seen from the host) serves each pod's engine on a loopback address of
its own and finds them by the live feed's discovery, over the simulated host's command lines and /proc: each
engine is reached at its pod address from its socket table, as on a real node. Inside a container
(`view = "container"`), the engine's endpoint carries the container's pids and its environment's GPUs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

from gpumem_tui.demo import SimulatedHost, WallClock, demo_collector, intro, load_scenario
from gpumem_tui.demo.engine_server import MockEngineServer
from gpumem_tui.demo.node import SimulatedNode
from gpumem_tui.demo.proc import pod_address
from gpumem_tui.engine_records import EndpointStatus
from gpumem_tui.models import ProcessRecord, Sample, SourceError
from gpumem_tui.sources.engines.discovery import survey
from gpumem_tui.sources.engines.endpoints import Endpoint, endpoint
from gpumem_tui.sources.engines.scraper import Scraper
from gpumem_tui.sources.feed import ENGINE_WAIT_S, Feed, engine_answers
from gpumem_tui.sources.placement import placed
from gpumem_tui.sources.signals import Stopper


class DemoFeed(Feed):
    """A simulated node: the real NVML source and binding over the fake NVML driver, engines behind real local
    servers."""

    def __init__(
        self,
        scenario: str,
        clock: Callable[[], float],
        seed: int | None = None,
        engine_wait_s: float | None = None,
        endpoints: Sequence[str] = (),
    ):
        """`engine_wait_s`: see the module's docstring (None by default: a stepped demo waits for its engines);
        `endpoints`: real endpoints scraped beside the simulated engines. Each simulated engine is shown at the
        one address its scenario declares, in every command (`declared`)."""
        self.collector, self.node = demo_collector(scenario, clock=clock, seed=seed)
        self.clock = clock
        self._stepping = threading.Lock()
        """Held while the node steps (a sample, in a thread) or a signal from the screen reaches it."""
        self.intro: str | None = None
        """What the scenario is and when its story shows: the note the app opens with (a running demo's)."""
        self.driver = getattr(getattr(self.collector.gpu_reader, "module", None), "nvmlLib", None)
        """The fake driver under the binding: inject faults into a demo."""
        self.name, self.live = f"demo {self.node.scenario.name}", True
        self.host: SimulatedHost = self.collector.host_reader  # type: ignore[assignment]
        spec = self.node.scenario
        self.pods = spec.view == "host" and any(engine.pod for engine in spec.engines)
        """Engines in pods: found by discovery, each at its pod's own address."""
        addresses = {e.id: pod_address(k) for k, e in enumerate(e for e in spec.engines if e.pod)} if self.pods else {}
        self.servers = {
            engine.id: MockEngineServer(
                [], "sglang" if engine.engine == "sglang" else "vllm-v1", addresses.get(engine.id, "127.0.0.1")
            ).start()
            for engine in spec.engines
        }
        for engine_id, server in self.servers.items():
            address, port = server.url.removeprefix("http://").rsplit(":", 1)
            self.host.proc.servers[engine_id] = (address, int(port))
        self.given = [endpoint(url) for url in endpoints]
        points = [] if self.pods else [self._served(server, engine_id) for engine_id, server in self.servers.items()]
        self.engine_wait_s = engine_wait_s
        self.notes: list[SourceError] = []
        # The scraper keeps simulated time too, so preemption rates and staleness follow the scenario's clock.
        self.scraper = Scraper(points + self.given, clock=clock)
        self.shown = {server.url: self.declared(engine_id) for engine_id, server in self.servers.items()}
        """Each mock server's own URL -> the engine's declared one: the only address any output shows."""

    @classmethod
    def running(
        cls,
        scenario: str,
        speed: float = 1.0,
        seed: int | None = None,
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
        sample = await asyncio.to_thread(self._collect)
        if self.pods:
            self._discover()
        elif self.host.proc.container:  # the engine's pids and GPUs are seen here once it runs
            self.scraper.endpoints = [self._served(server, id_) for id_, server in self.servers.items()] + self.given
        if not self.scraper.endpoints:
            return sample
        answers = await engine_answers(self.scraper, self.engine_wait_s)
        engines = [self._as_declared(e) for e in answers]
        return placed(sample.model_copy(update={"engines": engines, "errors": [*sample.errors, *self.notes]}))

    def declared(self, engine_id: str) -> str:
        """The address a simulated engine is shown at: its server's host (127.0.0.1, or its pod's loopback
        address) and the port its command line declares, as discovery finds an engine on a real node. The mock
        server listens on an ephemeral port instead (docs/design/app.md says why); that one is never shown."""
        host = self.servers[engine_id].url.removeprefix("http://").rsplit(":", 1)[0]
        return f"http://{host}:{self.node.engine_state(engine_id).port}"

    def _as_declared(self, status: EndpointStatus) -> EndpointStatus:
        """An answer from a mock server, its URL and its records' endpoint as the declared address."""
        url = self.shown.get(status.url)
        if url is None:  # a real endpoint scraped beside the demo
            return status
        records = [r.model_copy(update={"endpoint": url}) if r.endpoint == status.url else r for r in status.records]
        return status.model_copy(update={"url": url, "records": records})

    def _collect(self) -> Sample:
        """The node read, and what each engine server answers from now on."""
        with self._stepping:
            sample = self.collector.sample()
            for engine_id, server in self.servers.items():
                server.update([self.node.engine_state(engine_id)])
            return sample

    def stopper(self) -> Stopper:
        return SimulatedStopper(self.node, self._stepping)

    def _discover(self) -> None:
        """The live feed's discovery over the simulated host: its command lines and its /proc."""
        found = survey(self.host.command_lines(), (), self.host.proc.whereabouts)
        known = {e.url for e in self.given}
        self.scraper.endpoints = self.given + [e for e in found.endpoints if e.url not in known]
        self.notes = [SourceError(source="discovery", message=self._as_shown(note)) for note in found.notes]

    def _as_shown(self, text: str) -> str:
        """A note naming a server's real address and port names the ones shown instead (the same every run),
        as a real node's note would: the port its socket table shows is the one its command line says."""
        for real, shown in self.shown.items():
            port = shown.rsplit(":", 1)[1]
            said = f"{real.removeprefix('http://')} from its socket table (its command line says {port})"
            text = text.replace(said, f"{shown.removeprefix('http://')} from its socket table")
        return text

    def _served(self, server: MockEngineServer, engine_id: str) -> Endpoint:
        """An engine's endpoint as this view knows it: its pids here and, inside a container, its GPUs."""
        state = self.node.engine_state(engine_id)
        pids = self.host.pids_here(engine_id) if self.host.proc.container else state.pids
        devices = self.host.proc.devices(pids[0]) if self.host.proc.container and pids else None
        return endpoint(server.url, engine=state.engine, pids=tuple(pids), devices=tuple(devices) if devices else None)

    async def aclose(self) -> None:
        await self.scraper.aclose()
        for server in self.servers.values():
            server.stop()


class SimulatedStopper(Stopper):
    """The simulated node's processes, stopped as the demo's signals stop them (`SimulatedNode.signal`). The
    demo acts as its node's root: no owner keeps a process from it."""

    def __init__(self, node: SimulatedNode, stepping: threading.Lock):
        self.node, self.stepping = node, stepping

    def send(self, process: ProcessRecord, force: bool) -> bool:
        with self.stepping:
            return self.node.signal(process.pid, force)

    def ended(self, process: ProcessRecord) -> bool:
        with self.stepping:
            return not self.node.running(process.pid)
