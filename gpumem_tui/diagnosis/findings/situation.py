"""What every rule looks at: the plans, the current sample, the recent history and the thresholds."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.findings.capacity import more_conversations
from gpumem_tui.diagnosis.findings.records import Thresholds
from gpumem_tui.diagnosis.findings.trend import slope_bytes_per_s
from gpumem_tui.diagnosis.findings.words import compose, engine_short, gpus
from gpumem_tui.diagnosis.history import History, Point
from gpumem_tui.diagnosis.measured import endpoint_gpus, gpu_listing
from gpumem_tui.models import GpuRecord, ProcessRecord, Sample
from gpumem_tui.sources.engines.registry import looks_like_engine


@dataclass(frozen=True)
class Situation:
    plans: list[EnginePlan]
    sample: Sample
    history: History
    thresholds: Thresholds

    @cached_property
    def engine_pids(self) -> set[int]:
        """Pids an endpoint names, plus processes that look like an engine when some endpoint names none."""
        pids = {pid for endpoint in self.sample.engines for pid in endpoint.pids}
        if any(not endpoint.pids for endpoint in self.sample.engines) or not self.sample.engines:
            pids |= {p.pid for p in self.sample.processes if looks_like_engine(p.name, p.cmdline)}
        return pids

    @cached_property
    def engine_gpus(self) -> set[int]:
        """GPUs an engine uses: where its processes hold memory, or where a plan is drawn."""
        held = {p.gpu_index for p in self.sample.processes if p.pid in self.engine_pids}
        return held | {index for plan in self.plans for index in plan.gpu_indices}

    @cached_property
    def _trends(self) -> dict[int, tuple[list[Point], float | None]]:
        return {}

    def trend(self, gpu_index: int) -> tuple[list[Point], float | None]:
        """The GPU's used bytes over the trend window and their slope in bytes per second (None: too few), computed
        once per situation: the findings are worded in each unit from the same numbers."""
        if gpu_index not in self._trends:
            points = self.history.gpu_since(gpu_index, self.sample.timestamp - self.thresholds.trend_window_s)
            self._trends[gpu_index] = points, slope_bytes_per_s(points)
        return self._trends[gpu_index]

    @cached_property
    def _capacity(self) -> dict[tuple[int, int, int | None], list[str]]:
        return {}

    def more_conversations(self, plan: EnginePlan, pool_tokens: int, per_request: int | None) -> list[str]:
        """`capacity.more_conversations` (two predictions), once per situation: its words have no unit."""
        key = (id(plan), pool_tokens, per_request)
        if key not in self._capacity:
            self._capacity[key] = more_conversations(plan, pool_tokens, per_request)
        return self._capacity[key]

    def plan_for(self, url: str) -> EnginePlan | None:
        return next((plan for plan in self.plans if plan.endpoint == url), None)

    def gpus_of(self, url: str) -> list[int]:
        """GPUs the endpoint's processes hold memory on, else those its plan is drawn on, else those the
        history saw its processes on (an engine that has exited)."""
        endpoint = next((e for e in self.sample.engines if e.url == url), None)
        held = endpoint_gpus(self.sample, endpoint) if endpoint else []
        plan = self.plan_for(url)
        if held or (plan and plan.gpu_indices) or endpoint is None:
            return held or (plan.gpu_indices if plan else [])
        return endpoint_gpus(self.sample, endpoint, self.history)

    def engine_named(self, url: str, model: str | None = None) -> str:
        """`Engine: meta-llama/Llama-3.1-70B at http://127.0.0.1:8001 on GPU 2, 3.`: the sentence an engine's
        finding explains itself with, in full (its title names it short: `words.engine_short`)."""
        return engine_named(url, model, self.gpus_of(url))

    def engine_where(self, url: str) -> str:
        """`GPU 6,7`: where an engine's finding is, for its title."""
        return gpus(self.gpus_of(url))

    def engine_title(self, what: str, url: str, who: str, model: str | None) -> str:
        """`KV cache full on GPU 6,7: 56 waiting (Llama-3.1-70B :8003)`: an engine's finding's title, saying
        where the engine is and naming it short."""
        return compose(what, self.engine_where(url), who, engine_short(url, model))

    def plan_on(self, gpu_index: int) -> EnginePlan | None:
        return next((plan for plan in self.plans if gpu_index in plan.gpu_indices and plan.overlay), None)

    def processes_on(self, gpu_index: int) -> list[ProcessRecord]:
        return [p for p in self.sample.processes if p.gpu_index == gpu_index]

    def live_gpus(self) -> list[GpuRecord]:
        return [g for g in self.sample.gpus if not g.lost and g.memory_total_bytes]


def free_bytes(gpu: GpuRecord) -> int | None:
    """Free memory as NVML reports it, else total less used (and less reserved, when known)."""
    if gpu.memory_free_bytes is not None:
        return gpu.memory_free_bytes
    if gpu.memory_total_bytes is None or gpu.memory_used_bytes is None:
        return None
    return gpu.memory_total_bytes - gpu.memory_used_bytes - (gpu.memory_reserved_bytes or 0)


def percent(fraction: float) -> str:
    return f"{fraction * 100:.1f} %"


def duration(seconds: float) -> str:
    """`45 s`, `12 min`, `3.5 h`."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def engine_named(url: str, model: str | None, gpus: list[int]) -> str:
    """`Engine: meta-llama/Llama-3.1-70B at http://127.0.0.1:8001 on GPU 2, 3.`: a finding's title names its
    engine short; its explanation ends naming it in full, in this sentence."""
    return f"{ENGINE_SENTENCE.strip()} {engine_label(url, model, gpus)}."


ENGINE_SENTENCE = " Engine: "
"""Where `engine_named`'s sentence starts in an explanation."""


def said_of_any_engine(explanation: str) -> str:
    """An explanation without its closing `engine_named` sentence: what it says of any engine alike."""
    return explanation.split(ENGINE_SENTENCE, 1)[0]


def engine_label(url: str, model: str | None, gpus: list[int]) -> str:
    """How every finding names an engine: its model, its endpoint and its GPUs (`Engine: engine at ...` said
    engine twice where the model is unknown: then the endpoint alone)."""
    return (f"{model} at {url}" if model else url) + (f" on {gpu_listing(gpus)}" if gpus else "")
