"""The finding that explains an engine's exit from what came before it: who grew unexpectedly, how far free
memory fell, which findings were active. Forensics (`forensics.Investigation`) builds it when an engine's
processes disappear, from a recording or from the app's last minutes alike, and keeps it while the engine
stays down."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import NamedTuple

from gpumem_tui.diagnosis.findings.records import Finding
from gpumem_tui.diagnosis.findings.situation import duration, engine_named
from gpumem_tui.diagnosis.findings.words import compose, engine_short, gpus
from gpumem_tui.diagnosis.growth import Growth
from gpumem_tui.diagnosis.measured import gpu_listing
from gpumem_tui.sources.engines.advice import Advice
from gpumem_tui.sources.engines.registry import advice
from gpumem_tui.units import said

LISTED = 5
"""Growers and findings named in the explanation; the forensics screen lists them all."""


def clock(timestamp: float) -> str:
    """`2026-01-01 00:04:27 UTC`: what the engine's own log shows, so the two can be matched."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class Exited(NamedTuple):
    """Which engine exited, where it ran, and when: last seen holding memory, then gone."""

    url: str
    model: str | None
    gpus: list[int]
    last_seen: float
    gone: float
    kind: str | None = None
    """The engine's kind (`vllm`, `sglang`), where its last answer said."""


def engine_exited(
    engine: Exited,
    window_s: float,
    grew: list[Growth],
    culprits: list[Growth],
    free: tuple[int, int] | None,
    active: list[Finding],
    free_low: bool = True,
    lost: Sequence[int] = (),
    watched_all: bool = False,
) -> Finding:
    """`window_s`: how far `grew` looked back from when it was last seen (less than the forensics window where
    watching began later). `grew`: every grower in the window, unexpected first; `culprits`: those whose
    unexpected growth is large enough to blame; `free`: (GPU index, free bytes) of the engine's tightest GPU
    when last seen, named as a cause only when `free_low` (under the critical headroom: what the plan leaves
    on purpose is no cause); `active`: the findings (above info) raised on the last sample the engine was
    alive; `lost`: the engine's GPUs that NVML lost (the cause, first); `watched_all`: `window_s` is all
    that was watched before it."""
    top = culprits[0] if culprits else None
    oom = free is not None and free_low and not lost
    words = [
        f"Its processes were last seen holding GPU memory at {clock(engine.last_seen)} and were gone at "
        f"{clock(engine.gone)}."
    ]
    if lost:
        words.append(f"NVML lost {gpu_listing(list(lost))}: whatever ran there died with it.")
    if free and free_low:
        words.append(f"Free memory on GPU {free[0]} fell to {said(free[1])} just before.")
    if free and not free_low:
        words.append(f"Its tightest GPU, GPU {free[0]}, had {said(free[1])} free: no shortage.")
    if grew:
        words.append(
            f"Who grew in the {duration(window_s)} before it was last seen"
            + (" (all that was watched): " if watched_all else ": ")
            + "; ".join(
                f"{g.name or '?'} (pid {g.pid}) on GPU {g.gpu_index} +{said(g.growth_bytes)}, {g.why}"
                for g in grew[:LISTED]
            )
            + "."
        )
    if active:
        words.append("Active just before: " + "; ".join(f"{f.severity} {f.title}" for f in active[:LISTED]) + ".")
    words.append(engine_named(engine.url, engine.model, engine.gpus))
    return Finding(
        severity="critical",
        code="engine_exited",
        title=compose(
            "engine exited",
            gpus(engine.gpus) + (" (OOM?)" if oom else ""),
            _cause(engine, top, free if oom else None, active, lost),
            engine_short(engine.url, engine.model),
        ),
        explanation=" ".join(words),
        try_this=_lost_advice(lost) if lost and top is None else _advice(top, advice(engine.kind)),
        gpu_index=lost[0] if lost else top.gpu_index if top else free[0] if free else None,
        pid=top.pid if top else None,
        endpoint=engine.url,
    )


class Stopped(NamedTuple):
    """A signal sent with `k` to one of an engine's processes, and by whom in words (`by you from this screen`,
    `from the screen that recorded this`)."""

    pid: int
    signal: str
    timestamp: float
    by: str

    def words(self) -> str:
        """`stopped by you from this screen (SIGTERM at 00:04:27 UTC)`."""
        return f"stopped {self.by} ({self.signal} at {clock(self.timestamp)[11:]})"


def engine_stopped(engine: Exited, stop: Stopped) -> Finding:
    """The exit of an engine that `k` signalled: said as that, not as a crash to explain (a warning: the
    engine no longer serves, and the cause is known)."""
    return Finding(
        severity="warning",
        code="engine_exited",
        title=compose("engine exited", gpus(engine.gpus), stop.words(), engine_short(engine.url, engine.model)),
        explanation=(
            f"pid {stop.pid} was sent {stop.signal} {stop.by} at {clock(stop.timestamp)}; its processes were last "
            f"seen holding GPU memory at {clock(engine.last_seen)} and were gone at {clock(engine.gone)}. "
            f"The exit is that signal's, not a crash. {engine_named(engine.url, engine.model, engine.gpus)}"
        ),
        try_this="start the engine again when it should serve",
        gpu_index=engine.gpus[0] if engine.gpus else None,
        pid=stop.pid,
        endpoint=engine.url,
    )


def _cause(
    engine: Exited, top: Growth | None, free: tuple[int, int] | None, active: list[Finding], lost: Sequence[int]
) -> str:
    """What the exit's title blames: a lost GPU, who grew, the finding active just before, how far free memory
    fell, or that nothing points to a cause."""
    if lost:
        gone = "its GPU was lost" if list(lost) == engine.gpus else f"{gpu_listing(list(lost))} was lost"
        return gone + (f"; {_blame(top)} just before" if top else "")
    if top:
        return f"{_blame(top)} just before"
    if active:
        return f"just before, {active[0].title}"
    if free:
        return f"free memory fell to {said(free[1])}"
    return "nothing before it points to a cause"


def _lost_advice(lost: Sequence[int]) -> str:
    return (
        f"check `nvidia-smi` and the kernel log (dmesg: Xid) for {gpu_listing(list(lost))}; it may need a "
        "reset: restart the engine once the card answers again, or on other GPUs"
    )


def _blame(g: Growth) -> str:
    who = f"{g.name or 'a process this namespace cannot see'} pid {g.pid}"
    if g.expected_bytes:
        return f"its own {who} grew +{said(g.unexpected_bytes)} past its plan"
    return f"{who} grew +{said(g.unexpected_bytes)}"


def _advice(top: Growth | None, flags: Advice) -> str:
    if top is None:
        return "read the engine's log for the last error (CUDA out of memory, a lost GPU) before restarting it"
    if top.expected_bytes:
        return (
            f"the engine outgrew its plan: lower {flags.memory} or {flags.requests} before restarting; "
            "its log has the out-of-memory error"
        )
    return (
        f"free what pid {top.pid} holds on GPU {top.gpu_index} (stop it, or move it with CUDA_VISIBLE_DEVICES) "
        "before restarting the engine; the engine's log has the out-of-memory error"
    )
