"""View: everything one screen refresh draws, computed from the app's state without touching widgets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.text import Text

from gpumem_tui.autoplan import EnginePlan
from gpumem_tui.compare import CompareRow, compare_rows
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.findings import Finding, worst
from gpumem_tui.findings.differ import mismatched
from gpumem_tui.findings.headline import clear, count, level, ranked, summary
from gpumem_tui.findings.starting import starting_endpoints
from gpumem_tui.history import History
from gpumem_tui.measured import MeasuredSlice, endpoint_gpus, engine_pids, measured_slices
from gpumem_tui.models import GpuRecord, Sample
from gpumem_tui.planner.overlay import GpuOverlay
from gpumem_tui.text import literal
from gpumem_tui.units import Unit


@dataclass
class GpuView:
    gpu: GpuRecord
    slices: list[MeasuredSlice]
    overlay: GpuOverlay | None
    rows: list[CompareRow]
    history: list[float]
    verdict: tuple[str, str] = ("", "info")
    """What the one-line row says of this GPU against its plan, and how severe that is."""

    def args(self, unit: Unit) -> tuple:
        return self.gpu, self.slices, self.overlay, self.rows, self.history, unit, self.verdict


@dataclass
class View:
    sample: Sample | None
    source_label: str
    age_s: float | None
    paused: bool
    recording: str | None
    unit: Unit
    interval_s: float
    status_text: Text = field(default_factory=Text)
    gpus: list[GpuView] = field(default_factory=list)
    engines: list[tuple] = field(default_factory=list)
    findings: list = field(default_factory=list)
    engine_pids: set[int] = field(default_factory=set)
    summary: str = ""
    """What `check`'s status line says of these findings after its status word."""
    level: int = 0
    others: list[str] = field(default_factory=list)
    """Titles of the findings above info after the one the status line names."""
    clear: str = ""
    """What is said when nothing needs a look."""


def build_view(
    sample: Sample | None,
    history: History,
    overlays: dict[int, GpuOverlay],
    findings: list,
    plans: Sequence[EnginePlan] = (),
    **header,
) -> View:
    plans = list(plans)
    view = View(sample=sample, findings=ranked(findings), **header)  # in check's order: the headline first
    view.summary, view.level, view.clear = summary(findings, plans), level(findings), clear(plans, findings)
    view.others = [f.title for f in ranked(findings)[1:] if f.severity != "info"]
    if sample is None:
        view.status_text = Text("Waiting for the first sample…", style="dim")
        return view
    view.engine_pids = engine_pids(sample)
    view.status_text = _status(sample)
    records = _records(sample)
    starting = starting_endpoints(findings)
    loading = {index for e in sample.engines if e.url in starting for index in endpoint_gpus(sample, e)}
    served = {e.url: endpoint_gpus(sample, e, history) for e in sample.engines}
    for gpu in sample.gpus:
        slices = measured_slices(sample, gpu)
        overlay = overlays.get(gpu.index)
        engine = _engine_on(sample, gpu.index, records)
        rows = compare_rows(overlay, slices, engine, gpu.index in loading) if overlay and not gpu.lost else []
        mine = [f for f in findings if _concerns(f, gpu.index, served)]
        verdict = _verdict(gpu, overlay, gpu.index in loading, mine)
        view.gpus.append(GpuView(gpu, slices, overlay, rows, history.gpu(gpu.index), verdict))
    planned = {o.kv_pool_tokens for o in overlays.values() if o.kv_pool_tokens}
    other = {p.endpoint for p in plans if mismatched(p)}
    exits = {f.endpoint: f for f in findings if f.code == "engine_exited"}
    for endpoint, record in records:
        key = f"{endpoint.url} {record.model or ''}".strip() if record else endpoint.url
        gpus = endpoint_gpus(sample, endpoint, history) or _exit_gpus(exits.get(endpoint.url))
        drawn = next((overlays[i] for i in gpus if i in overlays), None)
        # an engine whose GPUs are not known (no pid given) is compared with the one plan, when there is one
        tokens = drawn.kv_pool_tokens if drawn else next(iter(planned)) if len(planned) == 1 and not gpus else None
        if endpoint.url in other:
            tokens = None  # a plan for another model, split or KV cache counts other tokens
        state = "starting" if endpoint.url in starting else "exited" if endpoint.url in exits else None
        view.engines.append((endpoint, record, tokens, history.engine(key), gpus, state))
    return view


def _exit_gpus(finding) -> list[int]:
    """The GPU an engine's exit finding names, when nothing else is left to say where it ran."""
    return [finding.gpu_index] if finding is not None and finding.gpu_index is not None else []


def _concerns(finding: Finding, index: int, served: dict[str, list[int]]) -> bool:
    """The finding is about this GPU: it names it, or it names an engine whose processes hold memory there."""
    if finding.gpu_index is not None:
        return finding.gpu_index == index
    return finding.endpoint is not None and index in served.get(finding.endpoint, ())


def _verdict(gpu: GpuRecord, overlay: GpuOverlay | None, loading: bool, findings: list[Finding]) -> tuple[str, str]:
    """The compact row's word on this GPU: lost, how many findings above info concern it, else whether it
    was compared with a plan at all."""
    if gpu.lost:
        return "lost", "critical"
    loud = [f for f in findings if f.severity != "info"]
    severity = worst(loud)
    if severity is not None:
        return count(sum(f.severity == severity for f in loud), severity), severity
    if overlay is None:
        return "no plan", "info"
    return ("loading", "info") if loading else ("as planned", "info")


def _records(sample: Sample) -> list[tuple[EndpointStatus, EngineRecord | None]]:
    out: list[tuple[EndpointStatus, EngineRecord | None]] = []
    for endpoint in sample.engines:
        out += [(endpoint, record) for record in endpoint.records] or [(endpoint, None)]
    return out


def _engine_on(sample: Sample, index: int, records) -> EngineRecord | None:
    pids = {p.pid for p in sample.processes if p.gpu_index == index}
    for endpoint, record in records:
        if record is not None and pids & set(endpoint.pids):
            return record
    return records[0][1] if len(records) == 1 and records[0][1] and sample.gpus and len(sample.gpus) == 1 else None


def _status(sample: Sample) -> Text:
    text = Text()
    for error in sample.errors:
        if text:
            text.append("\n")
        text.append(f"{literal(error.source)}: ", style="bold")
        text.append(literal(error.message))
        if error.hint:
            text.append(f" ({literal(error.hint)})", style="dim")
    return text
