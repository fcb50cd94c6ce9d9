"""One node of the simulated fleet, or `check --demo`'s, sampled in process: what `DemoFeed` reads of it, without
HTTP.

The GPUs, processes and host come through the node's own Collector (the real NVML binding over the fake driver,
the simulated host); each engine's answer is what the scraper makes of its mock server: the same /metrics text
(`engine_exposition.exposition`) through the same parser, `/v1/models` merged in, the preemption rate from the
counter, stale then down when the engine stops serving (HTTP 503), on the simulated clock: servers and a client
cost seconds over a fleet's history (docs/design/fleet.md). The node demo keeps the HTTP path (demo/feed.py);
tests/sources/test_fleet_node.py holds the two to the same samples.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from http import HTTPStatus

from gpumem_tui.catalog import Catalog
from gpumem_tui.demo import ManualClock, Scenario, SimulatedHost, SimulatedNode, load_scenario, node_collector
from gpumem_tui.demo.engine_exposition import exposition
from gpumem_tui.demo.engine_info import flavour, with_answers
from gpumem_tui.demo.engine_state import EngineState
from gpumem_tui.demo.fleet_moment import Endpoint, Moment, from_state, of_sample, plain
from gpumem_tui.demo.proc import pod_address
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.models import Sample, SourceError
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.engines.models_api import ServedModel, merge_models
from gpumem_tui.sources.engines.parse import parse_metrics
from gpumem_tui.sources.engines.rates import PreemptionRates
from gpumem_tui.sources.nvml import NvmlSource
from gpumem_tui.sources.placement import placed

STALE_LIMIT_S = 60.0
"""The scraper's own: an engine's last good answer is shown, stale, this long after it stopped answering."""
NOT_SERVING = f"HTTP 503 {HTTPStatus(503).phrase}"
"""What the scraper says of a mock server whose engine does not serve."""


@dataclass
class _Kept:
    """What the scraper keeps of one endpoint between polls."""

    last_good: list[EngineRecord] | None = None
    last_good_at: float = 0.0
    served: list[ServedModel] = field(default_factory=list)
    rates: PreemptionRates = field(default_factory=PreemptionRates)


class FleetNode:
    """A simulated node on a ManualClock; `sample()` reads it at the clock's moment, engines included.

    `scrape=False`: each engine's status (ok, stale, down, its pids) without the records a scrape parses; the
    fleet's series read what the engine reports from `reports` (the simulator's state) instead. `moment()` is
    what the fleet's series read of the node now."""

    def __init__(
        self,
        scenario: Scenario | str,
        clock: ManualClock,
        scrape: bool = True,
        seed: int | None = None,
        catalog: Catalog | None = None,
    ) -> None:
        """`scenario`: shipped by name, or loaded; `seed`: the simulator's (the scenario's own by default);
        `catalog`: the one loaded, handed on to the simulator."""
        spec = load_scenario(scenario) if isinstance(scenario, str) else scenario
        self.node = SimulatedNode(spec, clock=clock, seed=seed, catalog=catalog)
        self.clock, self.scrape = clock, scrape
        self.reports: dict[str, EngineState] = {}
        """What each endpoint's engine reports at the last sample, by its URL."""
        self.host = SimulatedHost(self.node)
        self.plain = plain(self.node)
        self.pods = spec.view == "host" and any(engine.pod for engine in spec.engines)
        pods = [engine for engine in spec.engines if engine.pod] if self.pods else []
        self.addresses = {e.id: pod_address(k) for k, e in enumerate(pods)}
        """Each engine's address: its pod's own, else 127.0.0.1 (where DemoFeed's server listens)."""
        for engine in spec.engines:
            self.host.proc.servers[engine.id] = (self.addresses.get(engine.id, "127.0.0.1"), engine.port)
        self.kept: dict[str, _Kept] = {}

    @functools.cached_property
    def collector(self) -> Collector:
        """The node's own Collector (NVML through the real binding), built when a whole sample is first read."""
        return node_collector(self.node, self.host)

    def close(self) -> None:
        """Done with the node: its copy of the NVML binding, if it read one, goes to the next node that does."""
        if "collector" in vars(self) and isinstance(self.collector.gpu_reader, NvmlSource):
            self.collector.gpu_reader.release()

    def sample(self) -> Sample:
        """The node now, as DemoFeed's `sample()` gives it when it waits for every engine's answer."""
        sample = self.collector.sample()
        points, notes = self._poll()
        if not points:
            return sample
        engines = [self._answer(url, self.reports[url], pids, devices) for url, _, pids, devices in points]
        return placed(sample.model_copy(update={"engines": engines, "errors": [*sample.errors, *notes]}))

    def moment(self) -> Moment:
        """What the fleet's series read of the node now: from the simulator's state where NVML reads the node
        as the state says (`fleet_moment.plain`), else from the whole sample."""
        if not self.plain:
            return of_sample(self.sample())
        points, _ = self._poll()
        endpoints = tuple(
            Endpoint(url, self._status(url, self.reports[url]), tuple(pids)) for url, _, pids, _ in points
        )
        return from_state(self.node, self.host.proc.pod, endpoints)

    def _poll(self) -> tuple[list[tuple[str, str, list[int], list[str]]], list[SourceError]]:
        """The endpoints found now and what each one's engine reports (`reports`); one no longer found is
        forgotten, as the scraper forgets it."""
        states = {state.id: state for state in self.node.engine_states()}
        points, notes = self._endpoints(states)
        self.reports = {url: states[engine_id] for url, engine_id, *_ in points}
        for url in set(self.kept) - set(self.reports):
            del self.kept[url]
        return points, notes

    def _endpoints(
        self, states: dict[str, EngineState]
    ) -> tuple[list[tuple[str, str, list[int], list[str]]], list[SourceError]]:
        """(URL, engine id, pids, devices) of each endpoint the feed scrapes, and discovery's notes."""
        if not self.pods:
            return [self._served(engine_id, states[engine_id]) for engine_id in self.host.proc.servers], []
        from gpumem_tui.sources.engines.discovery import survey  # engines in pods only: `check` rarely has them

        found = survey(self.host.command_lines(), (), self.host.proc.whereabouts)
        by_url = {
            f"http://{address}:{port}": engine_id for engine_id, (address, port) in self.host.proc.servers.items()
        }
        points = [(e.url, by_url[e.url], list(e.pids), list(e.devices or ())) for e in found.endpoints]
        return points, [SourceError(source="discovery", message=note) for note in found.notes]

    def _served(self, engine_id: str, state: EngineState) -> tuple[str, str, list[int], list[str]]:
        """An engine's endpoint as this view knows it: its pids here and, inside a container, its GPUs."""
        address = self.addresses.get(engine_id, "127.0.0.1")
        if not self.host.proc.container:
            return f"http://{address}:{state.port}", engine_id, list(state.pids), []
        pids = self.host.pids_here(engine_id)
        devices = self.host.proc.devices(pids[0]) if pids else None
        return f"http://{address}:{state.port}", engine_id, pids, list(devices or ())

    def _status(self, url: str, state: EngineState) -> str:
        """One poll's outcome as the scraper tells it: ok, stale (its last good answer is shown) or down."""
        kept = self.kept.setdefault(url, _Kept())
        now = self.clock()
        if state.serving:
            kept.last_good, kept.last_good_at = self._records(url, state, kept, now) if self.scrape else [], now
            return "ok"
        if kept.last_good is not None and now - kept.last_good_at <= STALE_LIMIT_S:
            return "stale"
        return "down"

    def _answer(self, url: str, state: EngineState, pids: list[int], devices: list[str]) -> EndpointStatus:
        """One poll of the engine's server as the scraper makes it: ok with its records, or failed."""
        word = self._status(url, state)
        kept, joined = self.kept[url], {"pids": pids, "devices": devices}
        if word == "ok":
            return EndpointStatus(url=url, state="ok", age_s=0.0, **joined, records=kept.last_good)
        if word == "stale":
            stale = {"error": NOT_SERVING, "age_s": self.clock() - kept.last_good_at, "records": kept.last_good}
            return EndpointStatus(url=url, state="stale", **stale, **joined)
        return EndpointStatus(url=url, state="down", error=NOT_SERVING, **joined)

    @staticmethod
    def _records(url: str, state: EngineState, kept: _Kept, now: float) -> list[EngineRecord]:
        """/metrics parsed, `/v1/models` merged in (asked beside it until it names a model), the rates filled."""
        if not kept.served:
            kept.served = [ServedModel(state.model, state.max_model_len)]
        records = parse_metrics(exposition(flavour(state), [state]).decode("utf-8", errors="replace"), endpoint=url)
        return kept.rates.apply(with_answers(merge_models(records, kept.served), state), now)
