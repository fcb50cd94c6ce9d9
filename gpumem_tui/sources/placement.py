"""Engines placed on their GPUs by the UUIDs their environment names, when NVML's pids are not theirs.

Inside a container the driver reports host pids the container cannot see, while discovery finds the engine
under its container pid. Its visible devices name its GPUs; the pids NVML lists there that this namespace
cannot see are counted as the engine's, a guess said in a note. Why, and how differing PID namespaces are
told: docs/design/node-sources.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpumem_tui.engine_records import EndpointStatus
from gpumem_tui.models import GpuRecord, ProcessRecord, Sample, SourceError

DIFFER = "PID namespaces differ"
"""How the note starts: the TUI, which lists the finding that says the same, leaves the note out."""
DIFFER_HINT = (
    "run gpumem-tui on the host, or in a pod with hostPID: true, to see every process by name; here the "
    "engine is placed by its GPUs' UUIDs"
)


def device_gpus(devices: Sequence[str], gpus: Sequence[GpuRecord]) -> list[int]:
    """Indices of the GPUs these selectors name: `GPU-<uuid>` (or its first part, as CUDA accepts),
    `MIG-<uuid>` or the older `MIG-GPU-<uuid>/<GI>/<CI>` (its card), or an index."""
    return sorted(device_slices(devices, gpus))


def device_slices(devices: Sequence[str], gpus: Sequence[GpuRecord]) -> dict[int, set[int | None] | None]:
    """GPU index -> the MIG GPU instances these selectors name on it, or None for the whole card. On a MIG
    card each GPU instance is usually another tenant's: a MIG selector takes only its own instance."""
    found: dict[int, set[int | None] | None] = {}
    for item in devices:
        for gpu in gpus:
            whole, instance = True, None  # a card selector, or a MIG one naming its GPU instance
            if item.isdigit():
                hit = gpu.index == int(item)
            elif item.startswith("MIG-GPU-"):  # before R470: MIG-<card's UUID>/<GI>/<CI>
                card, _, rest = item[4:].partition("/")
                hit = bool(gpu.uuid) and gpu.uuid == card
                gi = rest.partition("/")[0]
                whole, instance = not gi.isdigit(), int(gi) if gi.isdigit() else None
            elif item.startswith("MIG-"):
                owner = next((m for m in gpu.mig_instances if item in {m.uuid, *m.device_uuids}), None)
                hit, whole = owner is not None, False
                instance = owner.gpu_instance_id if owner else None
            else:
                hit = bool(gpu.uuid) and len(item) >= 8 and gpu.uuid.startswith(item)  # type: ignore[union-attr]
            if not hit:
                continue
            current = found.get(gpu.index, set())
            found[gpu.index] = None if whole or current is None else {*current, instance}
    return found


def _on(process: ProcessRecord, slices: dict[int, set[int | None] | None]) -> bool:
    if process.gpu_index not in slices:
        return False
    instances = slices[process.gpu_index]
    return instances is None or process.gpu_instance_id in instances


def placed(sample: Sample) -> Sample:
    """The sample with each engine that NVML knows by no pid placed on its GPUs by their UUIDs (see the
    module's docstring), and a note for each; unchanged when every engine's pids are NVML's."""
    reported = {p.pid for p in sample.processes}
    unseen = [p for p in sample.processes if p.visible is False]
    if not unseen or len(unseen) < len(sample.processes):
        return sample  # some pid of NVML's is seen here: one namespace (an invisible pid has exited)
    engines: list[EndpointStatus] = []
    notes: list[SourceError] = []
    for status in sample.engines:
        slices = device_slices(status.devices, sample.gpus)
        gpus = sorted(slices)
        if not status.pids or set(status.pids) & reported or not gpus:
            engines.append(status)
            continue
        theirs = sorted({p.pid for p in unseen if _on(p, slices)})
        engines.append(status.model_copy(update={"pids": [*status.pids, *theirs]}))
        where = "GPU " + ", ".join(map(str, gpus))
        counted = f"; NVML's pids there ({', '.join(map(str, theirs))}) are counted as its own" if theirs else ""
        notes.append(
            SourceError(
                source="host",
                message=f"{DIFFER}: NVML reports host pids, which this namespace cannot see, and "
                f"the engine at {status.url} is pid {', '.join(map(str, status.pids))} here. It is placed on "
                f"{where} by the GPU UUIDs its environment names{counted}",
                hint=DIFFER_HINT,
            )
        )
    if not notes:
        return sample
    return sample.model_copy(update={"engines": engines, "errors": [*sample.errors, *notes]})
