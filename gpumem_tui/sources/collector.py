"""One Sample of a node: the GPU source's reading joined with the host's view of each pid, plus engines."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from gpumem_tui.engine_records import EndpointStatus
from gpumem_tui.models import HostRecord, ProcessInfo, ProcessRecord, Sample, SourceError
from gpumem_tui.sources.nvml import NvmlReading, NvmlUnavailable


class GpuReader(Protocol):
    def read(self) -> NvmlReading: ...


class HostReader(Protocol):
    def describe(self, pids: Iterable[int]) -> dict[int, ProcessInfo]: ...
    def host(self) -> HostRecord | None: ...


class Collector:
    """Builds one Sample per call; a source that fails adds an error to the sample and the rest goes on."""

    def __init__(
        self,
        gpus: GpuReader,
        host: HostReader,
        *,
        source: str,
        hostname: str | None = None,
        clock: Callable[[], float] = time.time,
        engines: Callable[[], list[EndpointStatus]] | None = None,
    ):
        self._gpus, self._host, self._clock, self._engines = gpus, host, clock, engines
        self.source = source
        self.hostname = hostname or socket.gethostname()

    @property
    def gpu_reader(self) -> GpuReader:
        return self._gpus

    @property
    def host_reader(self) -> HostReader:
        return self._host

    def sample(self) -> Sample:
        timestamp = self._clock()
        errors: list[SourceError] = []
        try:
            reading = self._gpus.read()
        except NvmlUnavailable as exc:
            reading = NvmlReading(errors=[SourceError(source="nvml", message=exc.reason, hint=exc.hint)])
        errors.extend(reading.errors)
        infos = self._host.describe({process.pid for process in reading.processes})
        return Sample(
            timestamp=timestamp,
            hostname=self.hostname,
            source=self.source,
            driver_version=reading.driver_version,
            gpus=reading.gpus,
            processes=[_join(process, infos.get(process.pid)) for process in reading.processes],
            host=self._host.host(),
            engines=self._engines() if self._engines else [],
            errors=errors,
        )


def _join(process: ProcessRecord, info: ProcessInfo | None) -> ProcessRecord:
    if info is None:
        return process
    return process.model_copy(update=info.model_dump(exclude={"pid"}))
