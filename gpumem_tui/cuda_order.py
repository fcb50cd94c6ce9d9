"""NVML numbers GPUs by PCI bus id; CUDA, in the shell that starts an engine, may number them otherwise:
CUDA_VISIBLE_DEVICES picks and renumbers cards, and CUDA's default order (FASTEST_FIRST) puts a faster card
first on a node of mixed cards. When either applies, one note says so and how to match the cards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpumem_tui.text import literal


def index_note(environ: Mapping[str, str], names: Sequence[str | None]) -> str | None:
    """What to say once about this environment and these cards (NVML's names), or None when CUDA's indices
    are NVML's."""
    match = "match cards by bus id (nvidia-smi's Bus-Id), not by number"
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return (
            f"GPU numbers here are NVML's; CUDA_VISIBLE_DEVICES={literal(visible)} in this shell numbers "
            f"them otherwise for CUDA: {match}"
        )
    order = environ.get("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    if order != "PCI_BUS_ID" and len(set(names)) > 1:
        return (
            f"GPU numbers here are NVML's (PCI order); CUDA_DEVICE_ORDER={literal(order)} puts the fastest of "
            f"these mixed cards first for CUDA: {match}"
        )
    return None
