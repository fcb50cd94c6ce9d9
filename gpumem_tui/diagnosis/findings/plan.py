"""Findings that compare the engine with its plan: a plan for something else, the weights it holds, the KV
pool it carved, what the planner itself warns about."""

from __future__ import annotations

from typing import NamedTuple

from gpumem_tui.diagnosis.autoplan import EnginePlan, Planned, kv_bytes_per_token, measured_facts, planned, sized_with
from gpumem_tui.diagnosis.engine_values import plausible
from gpumem_tui.diagnosis.findings.differ import FORMAT, differences, mismatched, renamed
from gpumem_tui.diagnosis.findings.records import Finding, Severity, Thresholds, one_gpu
from gpumem_tui.diagnosis.findings.situation import Situation
from gpumem_tui.diagnosis.findings.words import compose, engine_short, gpus
from gpumem_tui.diagnosis.measured import gpu_listing
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.planner.serving import SIXTEEN_BIT
from gpumem_tui.planner.sglang.records import SglangSettings
from gpumem_tui.planner.vllm import EngineSettings
from gpumem_tui.sources.engines.registry import advice, registered
from gpumem_tui.units import said


def serving(s: Situation, plan: EnginePlan) -> tuple[EndpointStatus, EngineRecord] | None:
    """The plan's endpoint and its record, when it answered this time and the plan is for what it runs (a
    plan for another model, split or KV cache is `plan_mismatch`; its numbers are not held against the
    engine's)."""
    endpoint = next((e for e in s.sample.engines if e.url == plan.endpoint), None)
    if endpoint is None or endpoint.state != "ok" or not endpoint.records or mismatched(plan):
        return None
    record = next((r for r in endpoint.records if r.model), endpoint.records[0])
    return endpoint, plausible(record)  # a value that cannot be true is not a measurement


def plan_name(plan: EnginePlan) -> str:
    """Which engine a plan finding is about, short, for the end of its title (`Llama-3.1-70B :8000`): a plan
    for another model says both, a plan with no engine its model."""
    runs = measured_facts(plan).model or plan.model
    if plan.endpoint is None:
        return f"{engine_short(None, plan.model)} plan, no engine"
    if mismatched(plan):
        return f"{plan.label} plan for {engine_short(None, plan.model)} over {engine_short(plan.endpoint, runs)}"
    return engine_short(plan.endpoint, runs)


class Named(NamedTuple):
    """Which engine a plan finding is about, for the node's findings and the fleet's alike: short at the end
    of its title (`name`), where it runs (`GPU 0,1`), and in full at the end of its explanation (`engine`)."""

    name: str
    where: str
    engine: str = ""


def named(s: Situation, plan: EnginePlan) -> Named:
    return Named(plan_name(plan), plan_where(s, plan), plan_engine(s, plan))


def plan_where(s: Situation, plan: EnginePlan) -> str:
    """`GPU 0,1`: where a plan finding is, the engine's GPUs (the plan's own where no engine runs)."""
    return gpus(plan.gpu_indices) if plan.endpoint is None else s.engine_where(plan.endpoint)


def plan_engine(s: Situation, plan: EnginePlan) -> str:
    """` Engine: meta-llama/Llama-3.1-70B at http://127.0.0.1:8000 on GPU 0, 1.`: the engine in full, at the
    end of a plan finding's explanation (`Situation.engine_named`); empty for a plan with no engine."""
    if plan.endpoint is None:
        return ""
    return f" {s.engine_named(plan.endpoint, measured_facts(plan).model or plan.model)}"


def plan_mismatch(s: Situation) -> list[Finding]:
    """A hand-set plan whose model, weight format, KV cache, split or GPU is not what the engine runs; a plan
    that only names the model otherwise (same architecture) is said to be compared as is."""
    findings = []
    for plan in s.plans:
        running, settings = plan.running, sized_with(plan)
        if plan.endpoint is None and settings is not None and plan.card != settings.gpu.key:
            findings.append(_other_card(plan))
        if running is None or settings is None or plan.endpoint is None:
            continue
        if mismatched(plan):
            findings.append(_mismatch(s, plan, running))
        elif renamed(plan):
            findings.append(_renamed(s, plan, running))
    return findings


def _mismatch(s: Situation, plan: EnginePlan, running: EnginePlan) -> Finding:
    assert plan.endpoint is not None  # plan_mismatch compares only plans for an engine
    plan_side, engine_side = _sides(plan, running)
    differ = differences(plan)
    return Finding(
        severity="warning",
        code="plan_mismatch",
        title=s.engine_title(
            f"the {plan.label} plan is for another engine",
            plan.endpoint,
            f"{_listed(differ)} {'differs' if len(differ) == 1 else 'differ'}",
            running.model,
        ),
        explanation=f"The {plan.label} plan ({_from(plan)}): {plan_side}. The engine runs {engine_side}. Where "
        "the two differ, so does memory: its weights and KV pool are not held against this plan, and "
        "headroom is judged by the plan made from what runs. What is measured (the KV pool in bytes) is "
        f"counted with the engine's own model. {s.engine_named(plan.endpoint, running.model)}",
        try_this=_fix_plan(plan),
        gpu_index=one_gpu(plan.gpu_indices),
        endpoint=plan.endpoint,
    )


def _renamed(s: Situation, plan: EnginePlan, running: EnginePlan) -> Finding:
    """The plan names another model of the same architecture (a base model beside its instruct tune)."""
    assert plan.endpoint is not None  # plan_mismatch compares only plans for an engine
    return Finding(
        severity="info",
        code="plan_renamed",
        title=s.engine_title(
            f"the {plan.label} plan names another model",
            plan.endpoint,
            f"{plan.model}, same architecture, compared as is",
            running.model,
        ),
        explanation=f"{plan.model} and {running.model} have the same layers, widths, heads and parameter "
        "count, so they take the same memory: the plan's numbers are held against the engine's.",
        try_this="nothing: name the served model in the plan to make this note go",
        gpu_index=one_gpu(plan.gpu_indices),
        endpoint=plan.endpoint,
    )


def _from(plan: EnginePlan) -> str:
    """Where the plan came from, in words."""
    return {
        "planner screen": "applied from the planner screen",
        "scenario": "the one the demo's scenario was made with",
    }.get(plan.source or "", "from the command line")


def _fix_plan(plan: EnginePlan) -> str:
    """How to give the plan what the engine runs, where the plan came from."""
    if plan.source == "planner screen":
        return "size the plan for the engine's model, format, KV cache and split in the planner (p) and apply it"
    if plan.source == "scenario":
        return (
            "the scenario planned this engine otherwise: relaunch it as planned, or pass --model (with "
            "--weights, --kv-dtype, --gpus) to compare it with another plan"
        )
    return (
        "give the plan the engine's model, format, KV cache and split (--model, --weights, --kv-dtype, "
        "--gpus), or leave out --model to compare with the plan made from what runs"
    )


def _other_card(plan: EnginePlan) -> Finding:
    """A plan with no engine to compare, sized for another card than the one it is drawn over."""
    settings = sized_with(plan)
    assert settings is not None
    planned = settings.gpu.key
    return Finding(
        severity="warning",
        code="plan_mismatch",
        title=compose(
            f"the {plan.label} plan is for another card",
            gpus(plan.gpu_indices),
            f"sized for {planned}, not this node's {plan.card}",
            plan_name(plan),
        ),
        explanation=f"The plan's bands are {planned}'s on {settings.tp} GPU(s), drawn over "
        f"{gpu_listing(plan.gpu_indices)} ({plan.card}): the bars show what the plan takes there, not what "
        f"it would take here.",
        try_this=f"pick {plan.card} in the planner (p) to size the plan for this node",
        gpu_index=one_gpu(plan.gpu_indices),
    )


def _sides(plan: EnginePlan, running: EnginePlan) -> tuple[str, str]:
    """Both sides in words: model, weight format, KV cache, split and card."""
    settings = sized_with(plan)
    assert settings is not None  # plan_mismatch compares only plans with settings
    split = len(running.gpu_indices)
    plan_side = (
        f"{plan.model}, weights {_weights_format(settings)}, KV cache {settings.kv_cache_dtype}, on "
        f"{settings.tp} x {settings.gpu.key}"
    )
    where = f"on {split} x {plan.card or 'GPU'} ({gpu_listing(running.gpu_indices)})" if split else "on GPUs not known"
    runs = sized_with(running)
    kv = f", KV cache {runs.kv_cache_dtype}" if runs else ""
    engine_side = f"{running.model or 'a model it does not name'}, {_runs_words(running)}{kv}, {where}"
    return plan_side, engine_side


def _runs_words(running: EnginePlan) -> str:
    """The weights the engine loads, as far as its command line tells."""
    runs = sized_with(running)
    if runs is None or not (running.launch_seen or running.sglang):  # SGLang states its quantization
        return "weights in a format not known here (its command line is not visible)"
    return f"weights {_weights_format(runs)}" + ("" if runs.quantization else " (no --quantization)")


def _listed(words: list[str]) -> str:
    """`model`, `model and split`, `model, weight format and split`."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _weights_format(settings: EngineSettings | SglangSettings) -> str:
    """What the weights load as: the quantization asked for (`none`: the 16-bit dtype), else the
    checkpoint's own format."""
    spec = settings.model
    native = spec.native_dtype if spec.native_dtype in SIXTEEN_BIT else "bf16"
    if settings.quantization and settings.quantization.lower() == "none":
        return native
    return (settings.quantization or spec.checkpoint_format or native).lower()


def weights_mismatch(s: Situation) -> list[Finding]:
    findings = []
    for plan in s.plans:
        live, p = serving(s, plan), planned(plan)
        if p is None or live is None or live[1].kv_pool_tokens is None or not plan.gpu_indices:
            continue
        finding = _weights(s, plan, p, live[0], live[1])
        if finding is not None:
            findings.append(finding)
    return findings


def _weights(
    s: Situation, plan: EnginePlan, p: Planned, endpoint: EndpointStatus, record: EngineRecord
) -> Finding | None:
    t, gpu = s.thresholds, plan.gpu_indices[0]
    held = sum(x.gpu_memory_bytes or 0 for x in s.processes_on(gpu) if x.pid in endpoint.pids)
    if not held or not p.weights_bytes:
        return None
    kv = (record.kv_pool_tokens or 0) * (kv_bytes_per_token(measured_facts(plan)) or 0)
    others = p.overhead_bytes
    estimate = weights_estimate(held, kv, others, p.weights_bytes, p.activation_bytes)
    ratio = estimate / p.weights_bytes
    severity = weights_severity(ratio, t)
    if severity is None:
        return None
    precision = severity == "critical"
    settings = sized_with(plan)
    assert settings is not None  # a plan with a prediction has its settings
    planned_as = _weights_format(settings)
    # the engine loaded another format than the plan's: it deviates
    running = plan.running if differences(plan) == [FORMAT] else None
    return Finding(
        severity=severity,
        code="weights_mismatch",
        title=weights_title(
            plan_name(plan), plan_where(s, plan), ratio, _weights_who(running, estimate, p.weights_bytes, planned_as)
        ),
        explanation=f"The engine process holds {said(held)} on GPU {gpu}; less its KV pool ({record.kv_pool_tokens:,} "
        f"tokens = {said(kv)}) and about {said(others)} of {p.overhead_named}, that leaves "
        f"about {said(estimate)} of weights. The {plan.label} plan ({planned_as}) says {said(p.weights_bytes)}."
        + (
            f" The engine loaded {_runs_words(running).removeprefix('weights ')}, not the {planned_as} planned."
            if running
            else ""
        )
        + (" Twice (or half) the planned weights is the sign of the wrong precision loaded." if precision else "")
        + plan_engine(s, plan),
        try_this=_relaunch(plan, record.engine) if running else check_flags(planned_as, record.engine),
        gpu_index=gpu,
        endpoint=plan.endpoint,
    )


def _weights_who(running: EnginePlan | None, estimate: int, planned: int, planned_as: str) -> str:
    """`bf16 loaded, fp8 planned` where the engine's launch says what it loaded, else the two sizes."""
    runs = sized_with(running) if running is not None else None
    if running is not None and runs is not None and (running.launch_seen or running.sglang):
        return f"{_weights_format(runs)} loaded, {planned_as} planned"
    return f"about {said(estimate)} a GPU, {said(planned)} planned as {planned_as}"


def weights_title(name: str, where: str, ratio: float, who: str) -> str:
    """`weights_mismatch`'s title, the node's and the fleet's: weights `ratio` times the plan's on `where`
    (`GPU 0,1`), `who` (what was loaded, or the sizes), of the engine `name` (short)."""
    return compose(f"weights {ratio:.1f}x the plan", where, who, name)


def check_flags(planned_as: str, kind: str | None = "vllm") -> str:
    """What to try about weights unlike the plan's, the node's and the fleet's: the flags that load them (vLLM
    and SGLang both name them --quantization and --dtype)."""
    return (
        f"check the launch flags: the plan assumes {planned_as}; restart {engine_label(kind)} with the matching "
        "--quantization / --dtype (or fix the plan)"
    )


def engine_label(kind: str | None) -> str:
    """`vLLM`, `SGLang`: the engine kind as its registry entry names it."""
    entry = registered(kind)
    return entry.label if entry else "the engine"


def _relaunch(plan: EnginePlan, kind: str | None) -> str:
    """The plan is the intent and the engine loaded another format: relaunch it as planned."""
    settings, runs = sized_with(plan), sized_with(plan.running) if plan.running else None
    assert settings is not None and runs is not None
    method = settings.quantization
    flag = f"with --quantization {method}" if method else "without --quantization (the checkpoint's own format)"
    return (
        f"restart {engine_label(kind)} {flag}, as the {plan.label} plan ({_from(plan)}) says; if "
        f"{_weights_format(runs)} was meant, the plan is what to fix"
    )


def kv_pool_short(s: Situation) -> list[Finding]:
    findings = []
    for plan in s.plans:
        live, p = serving(s, plan), planned(plan)
        if p is None or live is None or live[1].kv_pool_tokens is None:
            continue
        pool, measured = p.pool_tokens, live[1].kv_pool_tokens
        severity = pool_short_severity(pool, measured, s.thresholds)
        if severity is None:
            continue
        where = plan.gpu_indices[0] if plan.gpu_indices else None
        length = p.context_len
        findings.append(
            pool_short(
                named(s, plan), plan.label, length, pool, measured, severity, where, plan.endpoint, live[1].engine
            )
        )
    return findings


def weights_estimate(held: int, kv_bytes: int, others: int, weights: int, activation_peak: int) -> int:
    """The weights in what an engine holds on one GPU: less its KV pool and its context, non-torch memory and
    CUDA graphs, and up to its profiled activation peak (activations grow back with the batch): the planned
    weights where they fit in that range, else its nearest end."""
    high = held - kv_bytes - others
    low = high - activation_peak
    return min(max(weights, low), high)


def weights_severity(ratio: float, t: Thresholds) -> Severity | None:
    """The one rule of `weights_mismatch`, the node's and the fleet's: weights `ratio` times the plan's are None
    within the tolerance, critical at the ratio of another precision (twice or half), else a warning."""
    if abs(ratio - 1) <= t.weights_tolerance_fraction:
        return None
    return "critical" if ratio >= t.weights_precision_ratio or ratio <= 1 / t.weights_precision_ratio else "warning"


def pool_short_advice(kind: str | None) -> str:
    """What to try about a short KV pool of an engine of this kind, on a node and in the fleet alike."""
    return (
        "look for what took the memory: larger weights (wrong precision), another process at startup, a lower "
        f"{advice(kind).lower_memory()} than planned"
    )


def pool_short_severity(planned: int, measured: int, t: Thresholds) -> Severity | None:
    """The one rule of `kv_pool_short`, the node's and the fleet's: a KV pool of `measured` tokens against
    `planned` is None within the tolerance (or with no planned pool), critical under half, else a warning."""
    if planned <= 0 or measured >= planned * (1 - t.kv_pool_tolerance_fraction):
        return None
    return "critical" if measured < planned / 2 else "warning"


def pool_short(
    named: Named,
    label: str,
    length: int,
    planned: int,
    measured: int,
    severity: Severity,
    gpu_index: int | None,
    endpoint: str | None,
    kind: str | None = None,
) -> Finding:
    """`kv_pool_short` of the engine `named` (of `kind`), the node's and the fleet's: a pool of `measured` tokens
    where the `label` plan says `planned`, in conversations at its `length`-token context."""
    short = planned - measured
    return Finding(
        severity=severity,
        code="kv_pool_short",
        title=compose(
            "KV pool smaller than planned", named.where, f"{measured:,} tokens, {planned:,} planned", named.name
        ),
        explanation=f"The engine carved {measured:,} tokens of KV cache; the {label} plan says {planned:,}. "
        f"That is {short / length:,.1f} fewer conversations at the planned {length:,}-token context "
        f"({measured / length:,.1f} fit instead of {planned / length:,.1f}).{named.engine}",
        try_this=pool_short_advice(kind),
        gpu_index=gpu_index,
        endpoint=endpoint,
    )


def note_severity(manual: bool) -> Severity:
    """The one rule of `plan_note`, the node's and the fleet's: a warning about a plan the user set (it cannot
    work as set), else info (the engine's own numbers win over a plan made for it)."""
    return "warning" if manual else "info"


def plan_notes(s: Situation) -> list[Finding]:
    """What the planner itself warns about, for each plan with a prediction (`notes_of`)."""
    findings = []
    for plan in s.plans:
        p = planned(plan)
        if p is not None:
            live = serving(s, plan)
            carved = live[1].kv_pool_tokens if live else None
            findings += notes_of(named(s, plan), plan.label, p.failures, p.warnings, plan.endpoint, carved)
    return findings


def notes_of(
    named: Named,
    label: str,
    failures: list[str],
    warnings: list[str],
    endpoint: str | None,
    carved: int | None = None,
) -> list[Finding]:
    """The `plan_note`s of one plan (`named`: the engine it is for), the node's and the fleet's: each line the
    planner says it does not fit or warns about. A plan the user set that cannot work is a warning; for a plan
    made from a running engine the engine's own numbers win, so it is only noted. A plan that does not fit an
    engine that carved a KV pool (`carved` tokens) assumed a fact that is not the engine's."""
    severity = note_severity(label == "manual")
    runs = (
        f"Yet the engine carved {carved:,} tokens of KV cache: a fact the plan assumed (its list of assumed facts) "
        "is not the engine's"
        if carved
        else ""
    )
    lines = [(line, "does not fit", runs) for line in failures]
    lines += [(line, "has a warning", "") for line in warnings]
    return [
        Finding(
            severity=severity,
            code="plan_note",
            title=compose(  # `does not fit on GPU 0,1, yet the engine runs`: one clause, not a cause after `:`
                f"the {label} plan {verdict}"
                + (f" on {named.where}" if named.where else "")
                + (", yet the engine runs" if more else ""),
                "",
                "",
                named.name,
            ),
            explanation=(f"{line}. {runs}." if more else line) + named.engine,
            try_this="see `gpumem-tui plan` for the whole sizing",
            endpoint=endpoint,
        )
        for line, verdict, more in lines
    ]
