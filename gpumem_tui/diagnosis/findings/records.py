"""The Finding record and the thresholds that decide when a finding is raised and how severe it is."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from gpumem_tui.records import Record

Severity = Literal["info", "warning", "critical"]
FindingCode = Literal[
    "nvml_unavailable",
    "gpu_lost",
    "gpu_not_accessible",
    "engine_down",
    "engine_starting",
    "plan_mismatch",
    "plan_renamed",
    "weights_mismatch",
    "kv_pool_short",
    "headroom_low",
    "foreign_process",
    "unattributed_memory",
    "pid_namespaces_differ",
    "engine_value_implausible",
    "kv_saturated",
    "context_too_long",
    "plan_note",
    "engine_exited",
    "refresh_failed",
    "source_stale",
    "not_joined",
    "config_drift",
]
"""Every code a finding can have; `findings/registry.py` says what each means and which rule raises it."""
SEVERITY_ORDER: dict[str, int] = {"info": 0, "warning": 1, "critical": 2}


class Finding(Record):
    """One thing worth telling the on-call engineer: what, the numbers behind it, and what to try."""

    severity: Severity
    code: FindingCode
    """Stable identifier (`headroom_low`); scripts match on it, never on the title."""
    title: str
    """One line."""
    explanation: str
    """The numbers, each with its unit."""
    try_this: str
    gpu_index: int | None = None
    pid: int | None = None
    endpoint: str | None = None

    @property
    def key(self) -> tuple:
        """What makes two findings 'the same one' from sample to sample."""
        return (self.code, self.gpu_index, self.pid, self.endpoint)


def one_gpu(indices: list[int] | tuple[int, ...]) -> int | None:
    """A finding's `gpu_index` for something on these GPUs: the GPU where it is one; None where it spans several
    (the finding is then the engine's, not one GPU's) or none is known."""
    return indices[0] if len(indices) == 1 else None


def worst(findings: list[Finding]) -> Severity | None:
    """The highest severity among the findings, None when there are none."""
    if not findings:
        return None
    return max((f.severity for f in findings), key=SEVERITY_ORDER.__getitem__)


class Thresholds(Record):
    """When findings are raised. Each can be set in the environment as GPUMEM_TUI_<NAME> (in any case); a
    value given here wins. Read by hand, not by pydantic-settings, whose import was a tenth of `check`."""

    model_config = ConfigDict(extra="forbid")

    def __init__(self, **given: Any) -> None:
        environment = {name.lower(): (name, value) for name, value in os.environ.items()}
        keys = {name: f"{PREFIX.lower()}{name}" for name in type(self).model_fields}
        found = {name: environment[key] for name, key in keys.items() if key in environment and name not in given}
        try:
            super().__init__(**{name: value for name, (_, value) in found.items()}, **given)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = str(first["loc"][0]) if first["loc"] else ""
            if field not in found:
                raise
            variable, value = found[field]  # the variable as the user spelt it
            raise ThresholdError(f"{variable}={value!r}: {first['msg'].removeprefix('Value error, ')}") from None

    headroom_warning_fraction: float = Field(default=0.10, gt=0, lt=1)
    """Free memory under this share of the card is a warning (unless the plan leaves that little on purpose)."""
    headroom_critical_fraction: float = Field(default=0.05, gt=0, lt=1)
    """Free memory under this share of the card is critical."""
    headroom_plan_tolerance_fraction: float = Field(default=0.02, ge=0, lt=1)
    """Free memory within this share of the card of what the plan leaves counts as 'as planned' (info)."""
    trend_window_s: float = Field(default=60.0, gt=0)
    """Seconds of history the memory trend (and the time to full) is fitted over: short enough that an
    engine's startup minutes ago does not read as growth now."""
    trend_min_bytes_per_s: float = Field(default=1_000_000.0, ge=0)
    """Growth slower than this (1 MB/s) is no trend: no time to full is projected."""
    foreign_min_bytes: int = Field(default=256 * 2**20, ge=0)
    """A non-engine process on an engine's GPU is reported from this much memory (256 MiB)."""
    unattributed_min_bytes: int = Field(default=2**30, ge=0)
    """Used memory no visible process accounts for is reported from this much (1 GiB)."""
    weights_tolerance_fraction: float = Field(default=0.15, gt=0)
    """Weights further than this share from the plan are a mismatch."""
    weights_precision_ratio: float = Field(default=1.7, gt=1)
    """Weights this many times the plan (or that fraction of it) point to the wrong precision: critical."""
    kv_pool_tolerance_fraction: float = Field(default=0.10, gt=0, lt=1)
    """A KV pool smaller than the plan by more than this share is short (critical from half)."""
    kv_saturated_fraction: float = Field(default=0.90, gt=0, le=1)
    """KV usage at or over this, with preemptions or a queue, is saturation."""
    forensics_window_s: float = Field(default=600.0, gt=0)
    """'Who grew' looks this many seconds back from the first critical finding and from an engine's exit
    (ten minutes: a neighbour that took the memory minutes before the engine needed it is still seen)."""
    engine_stall_s: float = Field(default=180.0, gt=0)
    """An engine that has never answered is starting (info) while its memory grows; once its memory has been
    flat this many seconds with still no answer, it is stuck (warning). Long enough for a start-up step that
    allocates nothing (compiling, downloading), short enough to page before users notice."""


PREFIX = "GPUMEM_TUI_"
"""Every environment variable of gpumem-tui's own begins so (in any case)."""


class ThresholdError(ValueError):
    """A threshold set in the environment that cannot be used, naming the variable: exit 2."""


def unknown_settings(environ: Mapping[str, str]) -> list[str]:
    """A warning for each GPUMEM_TUI_* variable that sets nothing (a misspelt threshold would be ignored
    silently), naming the nearest known one."""
    from gpumem_tui.catalog.loader import ENV_VAR  # read only where such a variable is set

    known = {ENV_VAR, *(f"{PREFIX}{name.upper()}" for name in Thresholds.model_fields)}
    said = []
    for name in sorted(environ):
        if name.upper().startswith(PREFIX) and name.upper() not in known:
            near = difflib.get_close_matches(name.upper(), sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]}?" if near else ""
            said.append(f"{name} is not a gpumem-tui setting and is ignored{hint}")
    return said


def all_clear(compared: int, engines: int = 0) -> str:
    """The line shown when nothing needs a look, in the TUI and as `check`'s status: agreement is claimed
    only for plans that were compared (`compared` of them, over `engines` running engines)."""
    if compared > 1:
        return f"Nothing needs a look: {compared} engines agree with their plans."
    if compared:
        return "Nothing needs a look: the node agrees with the plan."
    if engines:
        return (
            "Nothing needs a look; no engine could be compared with a plan yet (still loading, or its model "
            "or GPU is not known)."
        )
    return "Nothing needs a look; no plan was compared (no engine runs, and none was given with --model)."
