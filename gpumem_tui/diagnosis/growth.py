"""Who grew: each process's memory growth over a window, split into what its engine's plan expected
(loading the weights, carving the KV pool) and the rest, with the unexpected growth ranked first."""

from __future__ import annotations

from typing import NamedTuple

from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.findings.records import Thresholds
from gpumem_tui.diagnosis.findings.situation import Situation
from gpumem_tui.diagnosis.history import History
from gpumem_tui.models import Sample
from gpumem_tui.records import Record
from gpumem_tui.units import said

EXPECTED = "expected (planned: loading / KV pool)"
NOT_PLANNED = "the engine's own (no plan to compare)"
FOREIGN = "unexpected: not the engine's"


class Growth(Record):
    gpu_index: int
    pid: int
    name: str | None
    start_bytes: int
    """Its memory at the start of the window (0 when it started later; its first reading when it was there
    when watching began)."""
    end_bytes: int
    """Its memory at the window's end (its last reading, when it exited before)."""
    growth_bytes: int
    expected_bytes: int
    """The part its engine's plan accounts for; 0 for a process that is not an engine's."""
    unexpected_bytes: int
    why: str
    """`expected (planned: loading / KV pool)`, `unexpected: not the engine's`, or how far past its plan."""


class Allowance(NamedTuple):
    """What an engine's process may hold on one GPU and still be as planned."""

    planned_bytes: int | None
    """The plan's memory for the serving process on that GPU; None when there is no plan to compare."""
    slack_bytes: int


def allowances(plans: list[EnginePlan], sample: Sample, history: History, t: Thresholds) -> dict:
    """(gpu index, pid) -> Allowance, for every engine process in the sample."""
    s = Situation(plans, sample, history, t)
    pids_of = {e.url: set(e.pids) for e in sample.engines}
    totals = {g.index: g.memory_total_bytes or 0 for g in sample.gpus}
    out: dict[tuple[int, int], Allowance] = {}
    for p in sample.processes:
        if p.pid not in s.engine_pids:
            continue
        own = next(
            (
                plan
                for plan in plans
                if plan.overlay
                and p.gpu_index in plan.gpu_indices
                and plan.endpoint is not None
                and p.pid in pids_of.get(plan.endpoint, ())
            ),
            None,
        )
        plan = own or s.plan_on(p.gpu_index)
        slack = round(t.headroom_plan_tolerance_fraction * totals.get(p.gpu_index, 0))
        out[(p.gpu_index, p.pid)] = Allowance(plan.overlay.engine_bytes if plan and plan.overlay else None, slack)
    return out


def who_grew(history: History, names: dict, since: float, at: float, allowed: dict) -> list[Growth]:
    """Each process's growth between `since` and `at` (timestamps), unexpected growth first, then the
    largest; processes that did not grow are left out."""
    first = history.first_timestamp
    out = []
    for (gpu_index, pid), series in history.process_points.items():
        inside = [(t, b) for t, b in series if since <= t <= at]
        if not inside:
            continue
        # There before the window, or when watching began (what it held before is unknown): count from its
        # first reading in the window. Otherwise it started inside the window and all it holds is growth.
        start = inside[0][1] if series[0][0] < since or series[0][0] <= (first or 0) else 0
        end = inside[-1][1]
        if end <= start:
            continue
        expected, why = _expected(start, end, allowed.get((gpu_index, pid)))
        out.append(
            Growth(
                gpu_index=gpu_index,
                pid=pid,
                name=names.get((gpu_index, pid)),
                start_bytes=start,
                end_bytes=end,
                growth_bytes=end - start,
                expected_bytes=expected,
                unexpected_bytes=end - start - expected,
                why=why,
            )
        )
    return sorted(out, key=lambda g: (-g.unexpected_bytes, -g.growth_bytes))


def _expected(start: int, end: int, allowance: Allowance | None) -> tuple[int, str]:
    """How much of the growth from `start` to `end` the plan expected, and why, in words."""
    if allowance is None:
        return 0, FOREIGN
    if allowance.planned_bytes is None:
        return end - start, NOT_PLANNED
    beyond = max(0, end - max(start, allowance.planned_bytes + allowance.slack_bytes))
    if beyond == 0:
        return end - start, EXPECTED
    return end - start - beyond, f"unexpected: +{said(beyond)} past its plan of {said(allowance.planned_bytes)}"
