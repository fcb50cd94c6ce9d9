"""View: everything one screen refresh draws, computed from the app's state without touching widgets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.text import Text

from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.compare import CompareRow, compare_rows
from gpumem_tui.diagnosis.findings import Finding, worst
from gpumem_tui.diagnosis.findings.differ import mismatched
from gpumem_tui.diagnosis.findings.headline import WAITING, Verdict, clear, count, ranked, verdict
from gpumem_tui.diagnosis.findings.starting import starting_endpoints
from gpumem_tui.diagnosis.history import History
from gpumem_tui.diagnosis.measured import (
    MeasuredSlice,
    endpoint_gpus,
    engine_on,
    engine_pids,
    measured_slices,
    served_records,
)
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.models import GpuRecord, Sample
from gpumem_tui.planner.overlay import GpuOverlay
from gpumem_tui.sources.placement import DIFFER
from gpumem_tui.text import literal
from gpumem_tui.units import Unit


@dataclass(frozen=True)
class GpuView:
    """One GPU as its card draws it."""

    gpu: GpuRecord
    slices: list[MeasuredSlice]
    overlay: GpuOverlay | None
    rows: list[CompareRow]
    history: list[float]
    verdict: tuple[str, str] = ("", "info")
    """What the one-line row says of this GPU against its plan, and how severe that is."""


@dataclass(frozen=True)
class EngineView:
    """One served model as its card draws it."""

    endpoint: EndpointStatus
    record: EngineRecord | None
    planned_tokens: int | None
    """The plan's KV pool in tokens, where a plan for this engine's model and split was drawn."""
    history: list[float]
    gpus: list[int] = field(default_factory=list)
    """Where its processes hold (or last held) memory."""
    state: str | None = None
    """What the findings call the engine when they say more than its endpoint does: `starting`, `exited`."""


@dataclass(frozen=True)
class Header:
    """Where the numbers come from and the app's state: the part of the screen the keys change."""

    sample: Sample | None
    source_label: str
    age_s: float | None = None
    paused: bool = False
    recording: str | None = None
    unit: Unit = "GB"
    interval_s: float = 1.0


@dataclass(frozen=True)
class Judged:
    """One sample judged and laid out as GPUs and engines: built once per sample, in the refresh worker,
    and drawn again from here by every key."""

    sample: Sample | None
    plans: list[EnginePlan] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    worded: dict[Unit, list[Finding]] = field(default_factory=dict)
    """The same findings worded in each unit `g` switches between (sizes in the screen's unit)."""
    gpus: list[GpuView] = field(default_factory=list)
    engines: list[EngineView] = field(default_factory=list)
    engine_pids: set[int] = field(default_factory=set)
    status_text: Text = field(default_factory=Text)
    """Each source's notes (none before the first sample: the verdict's line says it waits for one)."""


@dataclass(frozen=True)
class View:
    """Everything one screen refresh draws: the judged sample, the findings in check's order (a failed
    refresh first among equals) and the header."""

    header: Header
    judged: Judged
    findings: list[Finding]
    verdict: Verdict = WAITING
    """What `check`'s status line says of these findings (before the first sample: that it waits for one)."""
    others: list[str] = field(default_factory=list)
    """Titles of the findings above info after the one the status line names."""
    clear: str = ""
    """What is said when nothing needs a look."""


def build_view(judged: Judged, header: Header, failed: Finding | None = None) -> View:
    """The screen for a judged sample, its header and the refresh that failed since, if one did."""
    said = judged.worded.get(header.unit, judged.findings)
    findings = [failed, *said] if failed else said
    plans = judged.plans
    if judged.sample is None and not findings:
        return View(header=header, judged=judged, findings=[], clear=WAITING.title)
    return View(
        header=header,
        judged=judged,
        findings=ranked(findings),  # in check's order: the headline first
        verdict=verdict(findings, plans),
        others=[f.title for f in ranked(findings)[1:] if f.severity != "info"],
        clear=clear(plans, findings),
    )


def lay_out(
    sample: Sample | None,
    history: History,
    overlays: dict[int, GpuOverlay],
    findings: list[Finding],
    plans: Sequence[EnginePlan] = (),
    worded: dict[Unit, list[Finding]] | None = None,
) -> Judged:
    """The sample's GPUs and engines against their plans and findings (reads `history`: call it where the
    history is written, never while it is); `worded`: the findings in each unit the screen can show."""
    plans, worded = list(plans), worded or {}
    if sample is None:
        return Judged(sample=None, plans=plans, findings=list(findings), worded=worded)
    records = served_records(sample)
    starting = starting_endpoints(findings)
    loading = {index for e in sample.engines if e.url in starting for index in endpoint_gpus(sample, e)}
    served = {e.url: endpoint_gpus(sample, e, history) for e in sample.engines}
    gpus = []
    for gpu in sample.gpus:
        slices = measured_slices(sample, gpu)
        overlay = overlays.get(gpu.index)
        on = engine_on(sample, gpu.index, records)
        engine = on[1] if on else None
        rows = compare_rows(overlay, slices, engine, gpu.index in loading) if overlay and not gpu.lost else []
        mine = [f for f in findings if _concerns(f, gpu.index, served)]
        verdict = _verdict(gpu, overlay, gpu.index in loading, mine)
        gpus.append(GpuView(gpu, slices, overlay, rows, history.gpu(gpu.index), verdict))
    planned = {o.kv_pool_tokens for o in overlays.values() if o.kv_pool_tokens}
    other = {p.endpoint for p in plans if mismatched(p)}
    exits = {f.endpoint: f for f in findings if f.code == "engine_exited"}
    engines = []
    for endpoint, record in records:
        key = f"{endpoint.url} {record.model or ''}".strip() if record else endpoint.url
        gpu_indices = endpoint_gpus(sample, endpoint, history) or _exit_gpus(exits.get(endpoint.url))
        drawn = next((overlays[i] for i in gpu_indices if i in overlays), None)
        # an engine whose GPUs are not known (no pid given) is compared with the one plan, when there is one
        tokens = (
            drawn.kv_pool_tokens if drawn else next(iter(planned)) if len(planned) == 1 and not gpu_indices else None
        )
        if endpoint.url in other:
            tokens = None  # a plan for another model, split or KV cache counts other tokens
        state = "starting" if endpoint.url in starting else "exited" if endpoint.url in exits else None
        engines.append(EngineView(endpoint, record, tokens, history.engine(key), gpu_indices, state))
    return Judged(
        sample=sample,
        plans=plans,
        findings=list(findings),
        worded=worded,
        gpus=gpus,
        engines=engines,
        engine_pids=engine_pids(sample),
        status_text=_status(sample, findings),
    )


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
    if not gpu.accessible:
        return "no access", "info"
    loud = [f for f in findings if f.severity != "info"]
    severity = worst(loud)
    if severity is not None:
        return count(sum(f.severity == severity for f in loud), severity), severity
    if overlay is None:
        return "no plan", "info"
    return ("loading", "info") if loading else ("as planned", "info")


def _status(sample: Sample, findings: Sequence[Finding] = ()) -> Text:
    """Each source's notes, but the placement note when the findings already say PID namespaces differ."""
    said = any(f.code == "pid_namespaces_differ" for f in findings)
    text = Text()
    for error in sample.errors:
        if said and error.source == "host" and error.message.startswith(DIFFER):
            continue
        if text:
            text.append("\n")
        text.append(f"{literal(error.source)}: ", style="bold")
        text.append(literal(error.message))
        if error.hint:
            text.append(f" ({literal(error.hint)})", style="dim")
    return text
