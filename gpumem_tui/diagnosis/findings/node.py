"""Findings about the node itself: NVML unusable, a GPU lost, the last refresh failed."""

from __future__ import annotations

from gpumem_tui.diagnosis.findings.records import Finding
from gpumem_tui.diagnosis.findings.situation import Situation


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


def refresh_failed(error: str) -> Finding:
    """The TUI's last refresh raised: the screen keeps the last sample that arrived."""
    return Finding(
        severity="warning",
        code="refresh_failed",
        title=f"refresh failed: {error}",
        explanation="the screen shows the last sample that arrived",
        try_this="see the log",
    )
