"""An engine that does not answer: starting (its memory grows toward the plan), stuck, or gone."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import EnginePlan, measured_facts, planned
from gpumem_tui.diagnosis.findings.records import Finding, Severity, one_gpu
from gpumem_tui.diagnosis.findings.situation import Situation, duration
from gpumem_tui.engine_records import EndpointStatus
from gpumem_tui.models import ProcessRecord
from gpumem_tui.units import MIB, said

FLAT_BYTES = 64 * MIB
"""Growth below this over the stall window is flat: allocator and CUDA context noise, not loading."""


def engine_down(s: Situation) -> list[Finding]:
    """One finding per endpoint that did not answer: `engine_starting` (info) while it loads, else `engine_down`."""
    return [_not_answering(s, endpoint) for endpoint in s.sample.engines if endpoint.state != "ok"]


def starting_endpoints(findings: list[Finding]) -> set[str]:
    """Endpoints the findings call starting: their plan-vs-measured gap is progress, not a difference."""
    return {f.endpoint for f in findings if f.code == "engine_starting" and f.endpoint}


def _not_answering(s: Situation, endpoint: EndpointStatus) -> Finding:
    alive = [p for p in s.sample.processes if p.pid in endpoint.pids]
    if alive and endpoint.state == "down" and not _answered_before(s, endpoint.url):
        grew = _growth(s, alive)
        if grew is None or grew > FLAT_BYTES:
            return _starting(s, endpoint, alive, grew)
    return _down(s, endpoint, alive)


def _answered_before(s: Situation, url: str) -> bool:
    """The history holds a KV reading from this endpoint: it served, so silence now is not start-up."""
    return any(key == url or key.startswith(url + " ") for key in s.history.kv_points)


def _growth(s: Situation, alive: list[ProcessRecord]) -> int | None:
    """How much the engine's memory grew over the last `engine_stall_s`; None when it has not been watched
    that long (a process that appeared inside the window grew from nothing)."""
    since = s.sample.timestamp - s.thresholds.engine_stall_s
    if not s.history.timestamps or s.history.timestamps[0] > since:
        return None
    grew = 0
    for process in alive:
        seen = s.history.process_since(process.gpu_index, process.pid, float("-inf"))
        if not seen or seen[0][0] > since:
            return None
        window = [b for t, b in seen if t >= since] + [process.gpu_memory_bytes or 0]
        grew = max(grew, max(window) - window[0])
    return grew


def _running_plan(s: Situation, url: str) -> EnginePlan | None:
    """The plan made from what the engine runs (beside a hand-set plan, the one made from its own facts):
    its name and its loading progress are the running model's, whatever the plan is for."""
    plan = s.plan_for(url)
    return measured_facts(plan) if plan else None


def _starting(s: Situation, endpoint: EndpointStatus, alive: list[ProcessRecord], grew: int | None) -> Finding:
    plan = _running_plan(s, endpoint.url)
    gpus = sorted({p.gpu_index for p in alive})
    held = min(sum(p.gpu_memory_bytes or 0 for p in alive if p.gpu_index == g) for g in gpus)
    where = f"GPU {gpus[0]}" if len(gpus) == 1 else f"the least loaded of GPU {', '.join(map(str, gpus))}"
    watched = (
        f"grew {said(grew)} in the last {duration(s.thresholds.engine_stall_s)}"
        if grew is not None
        else "has not been watched long enough to call it flat"
    )
    model = plan.model if plan else None
    return Finding(
        severity="info",
        code="engine_starting",
        title=s.engine_title("engine starting", endpoint.url, _progress(plan, held), model),
        explanation=f"{endpoint.error or 'no answer'}; its processes hold {said(held)} on {where}, and its memory "
        f"{watched}. It is called stuck once its memory stays flat for "
        f"{duration(s.thresholds.engine_stall_s)} with still no answer. {s.engine_named(endpoint.url, model)}",
        try_this="nothing yet: the endpoint answers once the weights are loaded and the KV pool is carved; "
        "follow the engine's log to watch it load",
        gpu_index=one_gpu(gpus),
        endpoint=endpoint.url,
    )


def _progress(plan: EnginePlan | None, held: int) -> str:
    """`weights 9.30 of 14.96 GiB planned`, then the whole process against the plan once weights are in."""
    p = planned(plan) if plan is not None else None
    if plan is None or p is None or plan.overlay is None:
        return ""
    weights, total, before = p.weights_bytes, plan.overlay.engine_bytes, p.before_weights_bytes
    if held < before + weights:
        return f"weights {said(max(0, held - before), unit=False)} of {said(weights)} planned"
    return f"weights loaded, {said(held, unit=False)} of {said(total)} planned in all (profiling, then the KV pool)"


def down_severity(alive: bool) -> Severity:
    """The one rule of `engine_down`, the node's and the fleet's: a warning while a process of the engine lives
    (stuck, hung or restarting), critical once none does or none is known (it exited, or nothing says it runs)."""
    return "warning" if alive else "critical"


def _down_state(s: Situation, endpoint: EndpointStatus, alive: list[ProcessRecord]) -> tuple[str, str]:
    """What is known of an engine that does not answer: in a few words for its title, and in full."""
    held = sum(p.gpu_memory_bytes or 0 for p in alive)
    if alive and endpoint.state == "down" and not _answered_before(s, endpoint.url):
        flat = duration(s.thresholds.engine_stall_s)
        return (
            f"stuck while starting? {said(held)} held, flat for {flat}",
            f"its processes hold {said(held)} and their memory has been flat for {flat}: stuck while starting?",
        )
    if alive:
        return (
            f"hung or restarting? its processes hold {said(held)}",
            f"its processes are alive and hold {said(held)} (hung, or restarting?)",
        )
    if endpoint.pids:
        pids = ", ".join(map(str, endpoint.pids))
        return "it has exited", f"its processes ({pids}) hold no GPU memory: the engine has exited"
    return "no process of it is known", "no process of it is known"


def _down(s: Situation, endpoint: EndpointStatus, alive: list[ProcessRecord]) -> Finding:
    short, state = _down_state(s, endpoint, alive)
    age = f"; last good answer {endpoint.age_s:,.0f} s ago" if endpoint.state == "stale" and endpoint.age_s else ""
    plan = _running_plan(s, endpoint.url)
    model = plan.model if plan else None
    return Finding(
        severity=down_severity(bool(alive)),
        code="engine_down",
        title=s.engine_title("engine does not answer", endpoint.url, short, model),
        explanation=f"{endpoint.error or 'no answer'}{age}; {state}. {s.engine_named(endpoint.url, model)}",
        try_this="read the engine's log for the last error (CUDA out of memory, a lost GPU, a step that hangs); "
        "restart it once the cause is gone",
        endpoint=endpoint.url,
    )
