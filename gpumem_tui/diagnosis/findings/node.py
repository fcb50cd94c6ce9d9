"""Findings about the node itself: NVML unusable, a GPU lost or closed to this process, PID namespaces
that differ, the last refresh failed."""

from __future__ import annotations

from gpumem_tui.diagnosis.findings.records import Finding
from gpumem_tui.diagnosis.findings.situation import Situation
from gpumem_tui.diagnosis.findings.words import compose, engine_short
from gpumem_tui.diagnosis.measured import gpu_listing


def nvml_unavailable(s: Situation) -> list[Finding]:
    """NVML gave nothing at all (a node-wide error, not one card's)."""
    errors = [e for e in s.sample.errors if e.source == "nvml" and e.gpu_index is None]
    if not errors or s.sample.gpus:
        return []
    error = errors[0]
    return [
        Finding(
            severity="critical",
            code="nvml_unavailable",
            title="NVML is not available: no GPU memory can be read",
            explanation=error.message,
            try_this=error.hint or "check that the NVIDIA driver is loaded (`nvidia-smi`); or try `--demo healthy-8b`",
        )
    ]


def gpu_lost(s: Situation) -> list[Finding]:
    findings = []
    for gpu in s.sample.gpus:
        if not gpu.lost:
            continue
        hint = next((e.hint for e in s.sample.errors if e.gpu_index == gpu.index and e.hint), None)
        findings.append(
            Finding(
                severity="critical",
                code="gpu_lost",
                title=f"GPU {gpu.index} is lost: it stopped answering",
                explanation=f"NVML: {gpu.error or 'GPU is lost'}. Its memory and processes can no longer be read; "
                "anything running on it has most likely died.",
                try_this=hint or "check `nvidia-smi` and the kernel log (dmesg: Xid); the card may need a reset",
                gpu_index=gpu.index,
            )
        )
    return findings


def _closed(s: Situation) -> list[int]:
    return [gpu.index for gpu in s.sample.gpus if not gpu.accessible]


def _closed_named(closed: list[int]) -> str:
    """`GPU 1 is`, `GPUs 1, 2 and 3 are`."""
    listed = ", ".join(str(i) for i in closed[:-1])
    return f"GPU {closed[0]} is" if len(closed) == 1 else f"GPUs {listed} and {closed[-1]} are"


def _unplaced(s: Situation) -> str:
    """Why an engine in another PID namespace is on no GPU: its environment names none NVML reports here,
    or names one this process may not open (whose UUID cannot be read to tell)."""
    closed = _closed(s)
    if closed:
        return (
            f"its environment names no GPU this process can read: {_closed_named(closed)} not accessible from "
            "here, and the engine's may be among them, so it is on no GPU here"
        )
    return "its environment names no GPU that NVML reports, so it is on no GPU here"


def gpu_not_accessible(s: Situation) -> list[Finding]:
    """GPUs NVML counts but will not open for this process: one info finding for all of them. Nothing is wrong
    with them; on-call needs to know why they are blank (and that no reset is called for)."""
    closed = _closed(s)
    if not closed:
        return []
    named = _closed_named(closed)
    return [
        Finding(
            severity="info",
            code="gpu_not_accessible",
            title=f"{named} not accessible from here",
            explanation="NVML counts every GPU of the node but refuses this process their handles (no "
            "permission): its cgroup or container lets it open only some of them (Slurm ConstrainDevices, "
            "`docker --gpus`, Kubernetes device plugin). They belong to other jobs; they are not read here, and "
            "nothing says they are unwell.",
            try_this="to see every GPU, run gpumem-tui outside the job (on the node itself, with access to all "
            "of /dev/nvidia*)",
        )
    ]


def pid_namespaces_differ(s: Situation) -> list[Finding]:
    """NVML lists pids, none of which this namespace can see, while an engine is found here: we run in a
    container, whose pids are not the driver's (host) pids. (One pid of NVML's seen here: one namespace, and
    the invisible ones have exited.)"""
    sample = s.sample
    unseen = {p.pid for p in sample.processes if p.visible is False}
    if not unseen or len(unseen) < len({p.pid for p in sample.processes}):
        return []
    findings = []
    for endpoint in sample.engines:
        if not endpoint.pids or not set(endpoint.pids) - unseen:
            continue
        gpus = s.gpus_of(endpoint.url)
        here = [pid for pid in endpoint.pids if pid not in unseen]
        counted = sorted(unseen & set(endpoint.pids))
        where = (
            f"it is placed on {gpu_listing(gpus)} by the GPU UUIDs its environment names; NVML's "
            + (f"pid {counted[0]} there is" if len(counted) == 1 else f"pids {', '.join(map(str, counted))} there are")
            + " counted as its own (a guess: another container sharing that GPU would be counted too)"
            if counted
            else _unplaced(s)
        )
        findings.append(
            Finding(
                severity="info",
                code="pid_namespaces_differ",
                title=compose(
                    "PID namespaces differ", "", "NVML's pids are not the ones seen here", engine_short(endpoint.url)
                ),
                explanation=f"NVML reports host pids ({', '.join(map(str, sorted(unseen)))}), which this PID "
                f"namespace cannot see: gpumem-tui runs in a container. The engine at {endpoint.url} is pid "
                f"{', '.join(map(str, here))} here; {where}.",
                try_this="run gpumem-tui on the host, or in a pod with hostPID: true, to see every process by "
                "name; inside the container, NVIDIA_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES) with GPU UUIDs "
                "places the engine",
            )
        )
    return findings


def refresh_failed(error: str) -> Finding:
    """The TUI's last refresh raised: the screen keeps the last sample that arrived."""
    return Finding(
        severity="warning",
        code="refresh_failed",
        title=f"refresh failed: {error}",
        explanation="the screen shows the last sample that arrived",
        try_this="see the log",
    )
