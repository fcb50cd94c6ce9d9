"""The simulated node: GPUs, engines and other processes from a scenario, stepped second by second.

Time comes from a clock the caller owns (a test's ManualClock, or a WallClock at any speed); every
query first catches up to that clock. One seeded random stream drives everything, so a scenario,
a seed and a time always give the same node.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from gpumem_tui.catalog import Catalog, LookupFailed, load_catalog
from gpumem_tui.demo.clock import ManualClock
from gpumem_tui.demo.engine import SimEngine
from gpumem_tui.demo.engine_state import EngineState
from gpumem_tui.demo.gpu import SimGpu
from gpumem_tui.demo.process import SimProcess
from gpumem_tui.demo.scenario import Event, Scenario, ScenarioError
from gpumem_tui.demo.sglang_engine import SimSglang
from gpumem_tui.models import HostRecord, ProcessInfo
from gpumem_tui.sources.signals import signal_name
from gpumem_tui.units import GIB

ENGINE_PIDS, OTHER_PIDS = 2100, 3100


class SimulatedNode:
    """A node that exists only in memory, physically honest: nothing holds more than its card has."""

    def __init__(
        self,
        scenario: Scenario,
        clock: Callable[[], float] | None = None,
        seed: int | None = None,
        catalog: Catalog | None = None,
    ):
        self.scenario = scenario
        self.clock = clock if clock is not None else ManualClock()
        self.seed = scenario.seed if seed is None else seed
        self.hostname = scenario.hostname or f"sim-{scenario.name}"
        self._rng = random.Random(self.seed)
        try:
            self._build(catalog or load_catalog())
        except LookupFailed as exc:
            raise ScenarioError(f"scenario {scenario.name}: {exc}") from None
        self._events = sorted(scenario.events, key=lambda event: event.at_s)
        self._applied = 0
        self._tick = -1
        self._infos: dict[tuple[str, int, bool], ProcessInfo] = {}
        """Each process's host view by (its id, pid, busy), built once: busy is all of it that moves, and
        records are frozen (a sample a second built a dozen of them twice)."""

    def _build(self, catalog: Catalog) -> None:
        self.gpus: list[SimGpu] = []
        self.denied_gpus: set[int] = set()
        """Indices of the cards the watching process may not open (`denied` groups)."""
        for group in self.scenario.gpus:
            spec = catalog.gpu(group.model)
            for _ in range(group.count):
                if group.denied:
                    self.denied_gpus.add(len(self.gpus))
                self.gpus.append(
                    SimGpu(
                        len(self.gpus),
                        spec,
                        group.reserved_mib,
                        list(group.unsupported),
                        group.mig_instances_mib,
                        self.seed,
                        group.compute_instances,
                    )
                )
        self.engines = [
            (SimSglang if spec.engine == "sglang" else SimEngine)(
                spec, self._gpus_for(spec.id, spec.gpus), catalog, spec.pid or ENGINE_PIDS + 100 * k
            )
            for k, spec in enumerate(self.scenario.engines)
        ]
        self.processes = [
            SimProcess(spec, self._gpus_for(spec.id, spec.gpus), spec.pid or OTHER_PIDS + 100 * k)
            for k, spec in enumerate(self.scenario.processes)
        ]
        ids = [e.spec.id for e in self.engines] + [p.spec.id for p in self.processes]
        if len(set(ids)) != len(ids):
            raise ScenarioError(f"scenario {self.scenario.name}: engine and process ids must be unique")

    def _gpus_for(self, owner: str, indices: list[int]) -> list[SimGpu]:
        if not indices or any(not 0 <= i < len(self.gpus) for i in indices):
            raise ScenarioError(
                f"scenario {self.scenario.name}: {owner} names GPUs {indices}, the node has {len(self.gpus)}"
            )
        return [self.gpus[i] for i in indices]

    @property
    def now(self) -> float:
        """Simulated seconds since the scenario started (whole seconds: the node steps once a second)."""
        self.sync()
        return float(max(self._tick, 0))

    @property
    def timestamp(self) -> float:
        return self.scenario.start_epoch + self.now

    def sync(self) -> None:
        """Step every whole second up to the clock."""
        target = math.floor(self.clock())
        while self._tick < target:
            self._tick += 1
            self._step(self._tick)

    def _step(self, now: int) -> None:
        while self._applied < len(self._events) and self._events[self._applied].at_s <= now:
            self._apply(self._events[self._applied], now)
            self._applied += 1
        for gpu in self.gpus:
            gpu.utilization_percent = 0
        for engine in self.engines:
            engine.tick(now, self._rng)
        for process in self.processes:
            process.tick(now)

    def _apply(self, event: Event, now: int) -> None:
        if event.kind == "gpu_lost":
            self.gpus[event.gpu].lost = True  # type: ignore[index]
            return
        engine = self._engine(event.engine)  # type: ignore[arg-type]
        engine.traffic.set_rate(now, event.rate or 0.0, event.ramp_s)

    def signal(self, pid: int, force: bool) -> bool:
        """A signal from the screen (`k`), SIGTERM or SIGKILL (`force`), ends the process now, its memory gone at
        once, unless it ignores SIGTERM; a signal to an engine's worker ends the engine. False: no process
        holding GPU memory has this pid."""
        why = f"stopped by {signal_name(force)} (pid {pid})"
        for engine in self.engines:
            if engine.alive and pid in engine.pids:
                engine.stop(why)
                return True
        for process in self.processes:
            if process.alive and process.pid == pid:
                if force or not process.spec.ignores_sigterm:
                    process.stop(why)
                return True
        return False

    def running(self, pid: int) -> bool:
        return any(e.alive and pid in e.pids for e in self.engines) or any(
            p.alive and p.pid == pid for p in self.processes
        )

    def engine_state(self, engine_id: str) -> EngineState:
        """What one engine would report now."""
        self.sync()
        return self._engine(engine_id).state()

    def _engine(self, engine_id: str) -> SimEngine:
        for engine in self.engines:
            if engine.spec.id == engine_id:
                return engine
        raise ScenarioError(f"scenario {self.scenario.name}: no engine {engine_id!r}")

    def engine_states(self) -> list[EngineState]:
        """What each engine would report now (the state a mock /metrics endpoint serves)."""
        self.sync()
        return [engine.state() for engine in self.engines]

    def process_infos(self) -> dict[int, ProcessInfo]:
        """Host-side view of every live simulated process: name, user, cmdline, RSS, CPU."""
        self.sync()
        infos: dict[int, ProcessInfo] = {}
        known, scenario = self._infos, self.scenario
        for engine in self.engines:
            if engine.alive:
                busy = engine.phase == "ready" and engine.traffic.running > 0
                for rank, pid in enumerate(engine.pids):
                    key = (engine.spec.id, pid, busy)
                    infos[pid] = known.get(key) or known.setdefault(key, _engine_info(engine, rank, busy, scenario))
        for process in self.processes:
            if process.alive:
                key = (process.spec.id, process.pid, False)
                infos[process.pid] = known.get(key) or known.setdefault(key, _process_info(process, scenario))
        return infos

    def host_record(self) -> HostRecord:
        spec = self.scenario.host
        infos = self.process_infos().values()
        used = round(spec.base_used_gib * GIB) + sum(info.host_rss_bytes or 0 for info in infos)
        total = round(spec.memory_total_gib * GIB)
        cpu = sum(info.cpu_percent or 0 for info in infos) / spec.cpu_count
        return HostRecord(
            memory_total_bytes=total,
            memory_used_bytes=used,
            memory_available_bytes=total - used,
            swap_total_bytes=round(spec.swap_total_gib * GIB),
            swap_used_bytes=0,
            cpu_percent=round(2.0 + cpu, 1),
            cpu_count=spec.cpu_count,
        )


def _process_info(process: SimProcess, scenario: Scenario) -> ProcessInfo:
    spec = process.spec
    return ProcessInfo(
        pid=process.pid,
        name=spec.name,
        user=spec.user,
        cmdline=list(spec.cmdline),
        host_rss_bytes=round(spec.host_rss_gib * GIB),
        cpu_percent=35.0,
        started=scenario.start_epoch + spec.start_s,
    )


def _engine_info(engine: SimEngine, rank: int, busy: bool, scenario: Scenario) -> ProcessInfo:
    spec = engine.spec
    name = "VLLM::EngineCore" if engine.tp == 1 else f"VLLM::Worker_TP{rank}"
    if spec.engine == "sglang":  # its scheduler sets its title, argv included (setproctitle)
        name = "sglang::scheduler" if engine.tp == 1 else f"sglang::scheduler_TP{rank}"
        return _process(engine, rank, busy, scenario, name, [name])
    cmdline = [
        "/usr/bin/python3",
        "/usr/local/bin/vllm",
        "serve",
        engine.model_id,
        "--tensor-parallel-size",
        str(engine.tp),
        "--gpu-memory-utilization",
        str(spec.gpu_memory_utilization),
        "--max-model-len",
        str(spec.max_model_len),
        "--port",
        str(spec.port),
    ]
    if spec.format not in ("bf16", "fp16"):
        cmdline += ["--quantization", spec.format]
    return _process(engine, rank, busy, scenario, name, cmdline)


def _process(engine: SimEngine, rank: int, busy: bool, scenario: Scenario, name: str, cmdline: list) -> ProcessInfo:
    return ProcessInfo(
        pid=engine.pids[rank],
        name=name,
        user=engine.spec.user,
        cmdline=cmdline,
        host_rss_bytes=round(4.5 * GIB),
        cpu_percent=100.0 if busy else 6.0,
        started=scenario.start_epoch + engine.spec.start_s,
    )
