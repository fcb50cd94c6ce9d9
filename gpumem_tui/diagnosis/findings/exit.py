"""The finding that explains an engine's exit from what came before it: who grew unexpectedly, how far free
memory fell, which findings were active. Forensics (`forensics.Investigation`) builds it when an engine's
processes disappear, from a recording or from the app's last minutes alike, and keeps it while the engine
stays down."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from gpumem_tui.diagnosis.findings.records import Finding
from gpumem_tui.diagnosis.findings.situation import duration
from gpumem_tui.diagnosis.growth import Growth
from gpumem_tui.diagnosis.measured import gpu_listing
from gpumem_tui.units import gib

LISTED = 5
"""Growers and findings named in the explanation; the forensics screen lists them all."""


def clock(timestamp: float) -> str:
    """`2026-01-01 00:04:27 UTC`: what the engine's own log shows, so the two can be matched."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def between(first: float, last: float) -> str:
    """`between 2026-01-01 00:04:25 and 00:04:30 UTC`: the exit fell between two samples, not at either."""
    start, end = clock(first).removesuffix(" UTC"), clock(last)
    return f"between {start} and {end[11:] if end[:10] == start[:10] else end}"


def engine_exited(
    url: str,
    name: str,
    last_seen: float,
    gone: float,
    window_s: float,
    grew: list[Growth],
    culprits: list[Growth],
    free: tuple[int, int] | None,
    active: list[Finding],
    free_low: bool = True,
    lost: Sequence[int] = (),
) -> Finding:
    """`name`: the engine as findings name it (model, endpoint, GPUs); `grew`: every grower in the window,
    unexpected first; `culprits`: those whose unexpected growth is large enough to blame; `free`: (GPU index,
    free bytes) of the engine's tightest GPU when last seen, named as a cause only when `free_low` (under the
    critical headroom: what the plan leaves on purpose is no cause); `active`: the findings (above info) raised
    on the last sample the engine was alive; `lost`: the engine's GPUs that NVML lost (the cause, first)."""
    top = culprits[0] if culprits else None
    clauses = [_blame(top)] if top else [active[0].title] if active and not lost else []
    if free and free_low:
        clauses.append(f"free memory on GPU {free[0]} fell to {gib(free[1])}")
    title = f"{name} exited {between(last_seen, gone)}"
    if lost:
        title += f": its {gpu_listing(list(lost))} was lost"
        title += f"; just before, {' and '.join(clauses)}" if clauses else ""
    else:
        title += f"; just before, {' and '.join(clauses)}" if clauses else "; nothing before it points to a cause"
    words = [f"Its processes were last seen holding GPU memory at {clock(last_seen)} and were gone at {clock(gone)}."]
    if lost:
        words.append(f"NVML lost {gpu_listing(list(lost))}: whatever ran there died with it.")
    if free and not free_low:
        words.append(f"Its tightest GPU, GPU {free[0]}, had {gib(free[1])} free: no shortage.")
    if grew:
        words.append(
            f"Who grew in the {duration(window_s)} before: "
            + "; ".join(
                f"{g.name or '?'} (pid {g.pid}) on GPU {g.gpu_index} +{gib(g.growth_bytes)}, {g.why}"
                for g in grew[:LISTED]
            )
            + "."
        )
    if active:
        words.append("Active just before: " + "; ".join(f"{f.severity} {f.title}" for f in active[:LISTED]) + ".")
    return Finding(
        severity="critical",
        code="engine_exited",
        title=title,
        explanation=" ".join(words),
        try_this=_lost_advice(lost) if lost and top is None else _advice(top),
        gpu_index=lost[0] if lost else top.gpu_index if top else free[0] if free else None,
        pid=top.pid if top else None,
        endpoint=url,
    )


def _lost_advice(lost: Sequence[int]) -> str:
    return (
        f"check `nvidia-smi` and the kernel log (dmesg: Xid) for {gpu_listing(list(lost))}; it may need a "
        "reset: restart the engine once the card answers again, or on other GPUs"
    )


def _blame(g: Growth) -> str:
    who = f"{g.name or 'a process this namespace cannot see'} (pid {g.pid})"
    if g.expected_bytes:
        return f"its own {who} grew +{gib(g.unexpected_bytes)} past its plan"
    return f"{who} grew +{gib(g.unexpected_bytes)} beside it"


def _advice(top: Growth | None) -> str:
    if top is None:
        return "read the engine's log for the last error (CUDA out of memory, a lost GPU) before restarting it"
    if top.expected_bytes:
        return (
            "the engine outgrew its plan: lower --gpu-memory-utilization or --max-num-seqs before restarting; "
            "its log has the out-of-memory error"
        )
    return (
        f"free what pid {top.pid} holds on GPU {top.gpu_index} (stop it, or move it with CUDA_VISIBLE_DEVICES) "
        "before restarting the engine; the engine's log has the out-of-memory error"
    )
