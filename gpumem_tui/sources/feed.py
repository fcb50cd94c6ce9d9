"""Feeds: where the app's samples come from. One async call gives a whole Sample, engines included.

`LiveFeed`: NVML, the host and engine endpoints; `DemoFeed` (in `gpumem_tui.demo.feed`, so the live feed
never loads the simulator); `ReplayFeed`: a recording. Engines never hold up the GPU read: a sample waits at
most `engine_wait_s` for the polls it started, then takes each endpoint's newest answer
(docs/design/node-sources.md).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Protocol

from gpumem_tui.models import Sample, SourceError
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.engines.discovery import Discovery, Look, survey
from gpumem_tui.sources.engines.endpoints import endpoint
from gpumem_tui.sources.engines.scraper import Scraper
from gpumem_tui.sources.host import own_addresses
from gpumem_tui.sources.pace import Pace
from gpumem_tui.sources.placement import placed
from gpumem_tui.sources.replay import ReplaySource, Signalled
from gpumem_tui.sources.signals import Signaller, Stopper

DISCOVERY_EVERY_S = 10.0
ENGINE_WAIT_S = 0.1
"""How long a running screen's sample waits for engine answers still out, after the GPU read."""
FIRST_WAIT_S = 1.0
"""How long the first sample waits for the engines' first answers."""


class Walk(Protocol):
    """Samples to walk in order, and what could not be read of them: a recording (RecordingReader), a node's
    series in Prometheus read over a span (node_history.py)."""

    warnings: list[str]

    def __iter__(self) -> Iterator[Sample]: ...


class Past(Protocol):
    """A feed's history beyond the minutes the app keeps, for forensics: what it is in words, and its read."""

    @property
    def what(self) -> str: ...

    def read(self) -> Walk: ...


class Feed(ABC):
    """What every feed offers the app. A feed gives one whole Sample per call; the rest has defaults for
    a feed that keeps no clock of its own, has nothing to say first and plays no recording."""

    name: str
    """Where the samples come from: `live`, `demo healthy-8b`, a recording's file name."""
    live: bool = True
    """True when samples are taken now (the header shows their age); False for a replay."""
    intro: str | None = None
    """What the app opens with: a running demo says what it shows and when."""

    @property
    def label(self) -> str:
        """What the header calls the source (a replay adds its position)."""
        return self.name

    @abstractmethod
    async def sample(self) -> Sample: ...

    async def aclose(self) -> None:
        """Let go of what the feed holds: connections, engine servers, poll tasks."""
        return None  # the default: nothing to do

    def pause(self) -> None:
        """Hold the feed's clock, so nothing is skipped on resume (a live node's time goes on)."""
        return None  # the default: nothing to do

    def resume(self) -> None:
        """Let the feed's clock run again after `pause`."""
        return None  # the default: nothing to do

    def now(self) -> float | None:
        """The feed's own time in seconds since the epoch, a sample's age is measured against it (a
        demo's simulated clock); None: the wall clock's."""
        return None

    @property
    def path(self) -> Path | None:
        """The recording a replay plays back (forensics walks it whole); None for any other feed."""
        return None

    def past(self) -> Past | None:
        """The history forensics walks beyond the minutes kept (a node's in Prometheus); None: none."""
        return None

    def stopper(self) -> Stopper | str:
        """What stops this feed's processes for `k` (a live node, a demo), or why nothing here can."""
        return "this source cannot stop processes"

    def events(self) -> list[Signalled]:
        """What the source recorded happening since the last call, each given once (a recording's signals)."""
        return []

    def signals(self) -> list[Signalled]:
        """Every signal the source recorded, a list that grows as it is read (a recording's); not consumed."""
        return []

    def ends_first_read(self, error: Exception) -> bool:  # noqa: ARG002 - the default: no error does
        """Whether a first read that failed so means there is nothing to show (no such node, no server): a
        screen opened on this feed alone then ends, and the command says why in one line."""
        return False


class LiveFeed(Feed):
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
        look: Look | None = None,
    ):
        """`engine_wait_s`: see the module's docstring; `addresses`: this node's own, where discovery may
        probe (endpoints given by hand are probed wherever they are); `look`: what /proc says of an engine
        process (`ProcFiles.whereabouts`), to reach engines in pods and place them on their GPUs."""
        self.collector, self.command_lines, self.name, self.live = collector, command_lines, label, True
        self.given = [endpoint(url) for url in endpoints]
        self.scraper = Scraper(self.given)
        self.engine_wait_s, self.addresses, self.look = engine_wait_s, addresses, look
        self._clock, self._discovered_at = clock, float("-inf")
        self._notes: list[SourceError] = []
        self._stopper = Signaller()

    async def sample(self) -> Sample:
        self.scraper.poll()  # the engines answer while the GPUs are read
        sample, found = await asyncio.gather(asyncio.to_thread(self.collector.sample), self._discover())
        if found is not None:
            known = {e.url for e in self.given}
            self.scraper.endpoints = self.given + [e for e in found.endpoints if e.url not in known]
        engines = await engine_answers(self.scraper, self.engine_wait_s)  # also lets go of endpoints gone
        return placed(sample.model_copy(update={"engines": engines, "errors": [*sample.errors, *self._notes]}))

    async def _discover(self) -> Discovery | None:
        """Engines among the host's processes, every DISCOVERY_EVERY_S; None when not due. Never raises:
        a failure is a note and the endpoints found before stay."""
        lines = self.command_lines
        if lines is None or self._clock() - self._discovered_at < DISCOVERY_EVERY_S:
            return None
        self._discovered_at = self._clock()
        try:
            found = await asyncio.to_thread(lambda: survey(lines(), set(self.addresses()), self.look))
        except Exception as exc:  # noqa: BLE001 - discovery is a convenience; the GPUs and --endpoint go on
            failed = f"engine discovery failed: {type(exc).__name__}: {exc}"
            self._notes = [SourceError(source="discovery", message=failed)]
            return None
        self._notes = [SourceError(source="discovery", message=note) for note in found.notes]
        return found

    def stopper(self) -> Stopper:
        return self._stopper

    async def aclose(self) -> None:
        await self.scraper.aclose()


async def engine_answers(scraper: Scraper, wait_s: float | None) -> list:
    """Every endpoint's newest answer, waiting `wait_s` at most (FIRST_WAIT_S the first time)."""
    first = scraper.looks == 0
    return await scraper.latest(max(wait_s, FIRST_WAIT_S) if first and wait_s is not None else wait_s)


class ReplayFeed(Feed):
    """A recording: each call gives the newest recorded sample at or before the replay position.
    Build its ReplaySource on a `Pace` to let pause hold the position."""

    def __init__(self, replay: ReplaySource, name: str, pace: Pace | None = None):
        self.replay, self.name, self.live, self.pace = replay, name, False, pace
        self._told = 0
        """Events of the recording said so far."""

    def pause(self) -> None:
        if self.pace:
            self.pace.pause()

    def resume(self) -> None:
        if self.pace:
            self.pace.resume()

    @property
    def label(self) -> str:
        position, end = self.replay.shown_position
        return f"replay {self.name} at {position:,.0f} s{', its end' if end else ''}"

    @property
    def path(self) -> Path:
        return self.replay.reader.path

    def stopper(self) -> str:
        return "a recording: its processes ran when it was recorded, and nothing here can stop them"

    def events(self) -> list[Signalled]:
        """The recording's events the replay has passed: signals sent from the screen that recorded it."""
        events, position = self.replay.reader.events, self.replay.position
        first = self.replay.first_timestamp
        due = list(itertools.takewhile(lambda e: e.timestamp - first <= position, events[self._told :]))
        self._told += len(due)
        return due

    def signals(self) -> list[Signalled]:
        return self.replay.reader.events

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
