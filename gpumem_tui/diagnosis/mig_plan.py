"""An engine on a MIG GPU instance is planned against the instance's memory, never the whole card's: its total
as read (dcgm-exporter's figures of it, NVML's), else the memory its MIG profile names (`3g.40gb`: assumed),
else no plan, with the reason. The fleet's plans (fleet/plans.py) and a node's (autoplan.py) size it here, so
both say the same figure and the same reason."""

from __future__ import annotations

import re

from gpumem_tui.catalog import GpuSpec
from gpumem_tui.units import GIB, MIB, fmt_both

MIG_PROFILE = re.compile(r"\d+g\.(\d+)gb", re.IGNORECASE)
"""A MIG profile's name (`3g.40gb`, `1g.10gb`): its memory rounded up to whole GiB as NVIDIA names it
(H100's 3g.40gb has 40,192 MiB, 39.25 GiB; its 1g.10gb 9,856 MiB)."""
WHOLE_CARD = "a plan for the whole card would not be its"
NOT_REPORTED = "its total is not reported"


def profile_of(name: str | None) -> str | None:
    """The MIG profile a MIG device's name ends with (NVML's `NVIDIA H100 80GB HBM3 MIG 3g.40gb`)."""
    found = MIG_PROFILE.search(name or "")
    return found[0] if found else None


def instance_gpu(
    card: GpuSpec,
    instance: str | None,
    total_bytes: int | None,
    profile: str | None,
    why: str,
    whose: str,
    found: list[str],
    assumed: list[str],
) -> GpuSpec | str:
    """The card's catalog entry sized as its MIG GPU instance `instance` (its memory, and none of the card's
    per-card figures: SMs, L2, what CUDA reports), or why its size is not known. `why`: why `total_bytes` is
    unknown; `whose`: whose figures `total_bytes` is (`dcgm-exporter's`)."""
    name = f"MIG GPU instance {instance}"
    if total_bytes is not None:
        total_mib = total_bytes // MIB
        found.append(f"{name} of its card: {fmt_both(total_bytes)} ({whose} figures of the instance)")
    elif profile and (named := MIG_PROFILE.fullmatch(profile)):
        total_mib = int(named[1]) * GIB // MIB
        assumed.append(
            f"{name} of its card: about {fmt_both(total_mib * MIB)}, as its MIG profile {profile} names it (NVIDIA "
            f"rounds it up to whole GiB); {whose} figures do not give its total ({why})"
        )
    else:
        said = f"its MIG profile {profile!r} names no memory" if profile else "no MIG profile names it"
        return f"it runs on {name} of its card, whose memory is not known ({why}; {said}); {WHOLE_CARD}"
    return card.model_copy(
        update={
            "key": f"{card.key} {name}",
            "aliases": [],
            "nvml_names": [],
            "memory_gb_marketed": None,
            "total_mib": max(1, total_mib),
            "nominal_gib": None,
            "torch_total_gib": None,
            "sm_count": None,
            "l2_cache_mib": None,
        }
    )


def held_instances(count: int) -> str:
    """Why an engine whose pod holds `count` > 1 GPU instances of one card is not planned."""
    return f"its pod holds {count} MIG GPU instances, so the memory it plans in is not known; {WHOLE_CARD}"


NO_INSTANCE = (
    "its card is in MIG mode and no GPU instance of it is joined to the engine's pod, so the instance's memory is "
    f"not known; {WHOLE_CARD}"
)
