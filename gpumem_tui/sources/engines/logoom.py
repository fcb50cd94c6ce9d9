"""PyTorch's CUDA out-of-memory message, read for its clues: who held the GPU and how much was free.

The wording is c10/cuda/CUDACachingAllocator.cpp's, in its forms from before torch 2.1 to now (each quoted
in docs/design/node-sources.md). Sizes are kept as ints of bytes; a message wrapped over several lines is
read joined again.
"""

from __future__ import annotations

import itertools
import re

from gpumem_tui.sources.engines.startup_log import OomClues, ProcessMemory
from gpumem_tui.units import fmt_auto, parse_size

SIZE = r"(?<!\d)(\d{1,15}(?:\.\d{1,6})?) (bytes|KiB|MiB|GiB|TiB)"
"""A size as PyTorch's format_size writes it. Bounded, so a number no GPU holds is no reading, and a run of
digits is scanned once (the look-behind starts a match only where the run starts)."""

_ONE = {
    "tried_to_allocate_bytes": re.compile(r"Tried to allocate " + SIZE),
    "total_capacity_bytes": re.compile(r"has a total capac(?:i)?ty of " + SIZE + "|; " + SIZE + " total capacity"),
    "free_bytes": re.compile(r"of which " + SIZE + " is free|; " + SIZE + r" free[;)]"),
    "allowed_bytes": re.compile(SIZE + " allowed; "),
    "this_process_bytes": re.compile(r"this process has " + SIZE + " memory in use"),
    "allocated_by_pytorch_bytes": re.compile(
        r"Of the allocated memory " + SIZE + " is allocated by PyTorch|; " + SIZE + " already allocated"
    ),
    "private_pools_bytes": re.compile(r"with " + SIZE + r" allocated in private pools"),
    "reserved_unallocated_bytes": re.compile(SIZE + " is reserved (?:by PyTorch )?but unallocated"),
    "reserved_by_pytorch_bytes": re.compile(SIZE + r" (?:reserved in total by PyTorch|cached)\)"),
}
MAX_PROCESSES = 32
"""Processes kept from one message: a GPU holds a few dozen at most; the rest of a longer list is noise."""
_DEVICE = re.compile(r"\bGPU (\d{1,4})(?: has a total capac|; )")
_PROCESS = re.compile(r"Process (\d{1,10}) has " + SIZE + " memory in use")


def oom_clues(text: str) -> OomClues | None:
    """The clues one line of the message states, or None when it states none."""
    found: dict[str, object] = {}
    for key, pattern in _ONE.items():
        match = pattern.search(text)
        if match:
            number, unit = [g for g in match.groups() if g is not None][:2]
            found[key] = _bytes(number, unit)
    device = _DEVICE.search(text)
    if device:
        found["device"] = int(device.group(1))
    found_processes = itertools.islice(_PROCESS.finditer(text), MAX_PROCESSES)
    processes = [ProcessMemory(pid=int(m[1]), bytes=_bytes(m[2], m[3])) for m in found_processes]
    if processes:
        found["processes"] = processes
    return OomClues(**found) if found else None


def summary(clues: OomClues | None) -> str:
    """`CUDA out of memory on GPU 0 allocating 0.34 GiB: 0.21 GiB free of 23.68 GiB`."""
    words = "CUDA out of memory"
    if clues is None:
        return words
    if clues.device is not None:
        words += f" on GPU {clues.device}"
    if clues.tried_to_allocate_bytes is not None:
        words += f" allocating {_size(clues.tried_to_allocate_bytes)}"
    if clues.free_bytes is not None and clues.total_capacity_bytes is not None:
        words += f": {_size(clues.free_bytes)} free of {_size(clues.total_capacity_bytes)}"
    return words


def details(clues: OomClues) -> list[str]:
    """Who held the memory, one line each: other processes, this process, PyTorch's own split."""
    lines = [f"process {p.pid} holds {_size(p.bytes)}" for p in clues.processes]
    if clues.this_process_bytes is not None:
        lines.append(f"this process holds {_size(clues.this_process_bytes)} (PyTorch's and the rest)")
    if clues.allowed_bytes is not None:
        lines.append(f"this process is allowed {_size(clues.allowed_bytes)} (a memory fraction is set)")
    torch = []
    if clues.allocated_by_pytorch_bytes is not None:
        pools = clues.private_pools_bytes
        torch.append(
            f"{_size(clues.allocated_by_pytorch_bytes)} allocated"
            + (f" ({_size(pools)} of it in private pools such as CUDA graphs)" if pools else "")
        )
    if clues.reserved_unallocated_bytes is not None:
        torch.append(f"{_size(clues.reserved_unallocated_bytes)} reserved but unallocated")
    if clues.reserved_by_pytorch_bytes is not None:
        torch.append(f"{_size(clues.reserved_by_pytorch_bytes)} reserved in total")
    if torch:
        lines.append("PyTorch: " + ", ".join(torch))
    return lines


def _bytes(number: str, unit: str) -> int:
    return int(number) if unit == "bytes" else parse_size(f"{number}{unit}")


def _size(n: int) -> str:
    """A size of the clues in the unit PyTorch's own message gives it (`2.00 MiB`, `448.00 KiB`, `44.53 GiB`):
    in GiB alone, a small allocation read `0.00 GiB`."""
    return fmt_auto(n, digits=2)
