"""A plan made from what is running: each engine's model, split, settings and GPU, predicted with the rules of
the startup model its registry entry names (vLLM's, or SGLang's: sglang_plan.py); an engine no model sizes gets
its facts and no plan.

Every fact is either found (the engine's metrics, /v1/models, its command line, NVML) or assumed (a
default), and the plan says which. A plan the user set (`ManualPlan`) wins over the inferred one.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from gpumem_tui.catalog import Catalog, CatalogError, GpuSpec, LookupFailed, ModelMatch, ModelSpec
from gpumem_tui.catalog.hfconfig import find_cached, load_config, model_from_config
from gpumem_tui.catalog.names import closest
from gpumem_tui.diagnosis.engine_values import LABELS, plausible, shown, why_implausible
from gpumem_tui.diagnosis.measured import endpoint_gpus, gpu_listing
from gpumem_tui.diagnosis.mig_plan import NO_INSTANCE, NOT_REPORTED, held_instances, instance_gpu, profile_of
from gpumem_tui.diagnosis.overlays import ManualPlan, PlanSource, gpu_spec_for, manual_settings, manual_split
from gpumem_tui.diagnosis.sglang_plan import context_bytes, sglang_plan
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.models import GpuRecord, MigInstance, Sample
from gpumem_tui.planner.dtypes import PlanInputError
from gpumem_tui.planner.kv import layer_bytes_per_token
from gpumem_tui.planner.overlay import CUDA_CONTEXT_BYTES, GpuOverlay, overlay_from_engine
from gpumem_tui.planner.sglang.records import SglangPrediction, SglangSettings
from gpumem_tui.planner.vllm import DEFAULT_VERSION, EnginePrediction, EngineSettings, predict
from gpumem_tui.planner.vllm.vision import limits_from_flags
from gpumem_tui.records import Record
from gpumem_tui.sources.engines.launch_flags import launch_flags, number
from gpumem_tui.sources.engines.registry import looks_like_engine, registered, started_by
from gpumem_tui.sources.placement import device_slices
from gpumem_tui.text import literal

PlanLabel = Literal["auto", "manual"]

PREDICTIONS_KEPT = 64
_PREDICTIONS: dict[str, EnginePrediction] = {}
"""Settings (as JSON) -> their prediction: `predicted`."""


class EnginePlan(Record):
    """The plan for one engine endpoint (or for the node, when a manual plan finds no engine)."""

    endpoint: str | None
    model: str | None
    gpu_indices: list[int]
    """GPUs the engine's processes hold memory on (the plan is drawn over each)."""
    label: PlanLabel
    users: int = 1
    """Conversations the plan means to hold at its max length at once."""
    settings: EngineSettings | None = None
    prediction: EnginePrediction | None = None
    overlay: GpuOverlay | None = None
    found: list[str] = []
    assumed: list[str] = []
    missing: str | None = None
    """Why no prediction could be made (model or GPU unknown), in words."""
    launch_seen: bool = False
    """The engine's command line was read, so a flag it lacks (--quantization) is known to be absent."""
    card: str | None = None
    """The catalog key of the card the plan is drawn over (by its NVML name, else its size)."""
    source: PlanSource | None = None
    """Where a hand-set plan came from (`ManualPlan.source`); None for a plan made from the engine."""
    context_assumed: bool = False
    """The max length is the model's own maximum by default: neither the engine nor its command line said it
    (an engine read from Prometheus: vLLM's metrics do not carry it)."""
    running: EnginePlan | None = None
    """Beside a plan set by hand: the plan made from the engine's own facts. What is measured (its KV
    pool in bytes) is counted with these, and where they differ from the hand-set plan that is a finding."""
    sglang_settings: SglangSettings | None = None
    """SGLang's flags the plan was sized with (an SGLang engine's), where `settings` holds vLLM's."""
    sglang: SglangPrediction | None = None
    """SGLang's own sizing of it (planner/sglang): its fraction, pool and what the rest holds; None for vLLM's."""


def engine_plans(sample: Sample, catalog: Catalog, manual: ManualPlan | None = None) -> list[EnginePlan]:
    """One plan per engine endpoint in the sample; the manual plan replaces the auto one where it applies."""
    applies = _manual_targets(sample.engines, manual, catalog)
    plans = [_plan(e, sample, catalog, manual if e.url in applies else None) for e in sample.engines]
    if manual is not None and not plans:
        plans.append(_plan(None, sample, catalog, manual))
    return plans


def _manual_targets(engines: list[EndpointStatus], manual: ManualPlan | None, catalog: Catalog) -> set[str]:
    """Engines serving the manual plan's model; every engine when none does (or none says)."""
    if manual is None:
        return set()
    serving = {e.url for e in engines if _serves(_model_name(e), manual.model, catalog)}
    return serving or {e.url for e in engines}


def _serves(name: str | None, model: ModelSpec, catalog: Catalog) -> bool:
    """Whether an engine's model name is the plan's model: one of its names, or one the catalog resolves to it."""
    if not name:
        return False
    if name.strip().lower() in {n.lower() for n in model.names}:
        return True
    try:
        return catalog.match_model(name).entry == model.id
    except LookupFailed:
        return False


def predicted(settings: EngineSettings) -> EnginePrediction:
    """`predict`, kept for settings predicted before: an engine's settings stay the same sample after sample,
    and so does its prediction (about 0.2 ms each, several a sample). Keyed by the settings' JSON, so any
    change in them (the catalog's model included) is predicted anew; at most PREDICTIONS_KEPT are kept."""
    key = settings.model_dump_json()
    found = _PREDICTIONS.get(key)
    if found is None:
        if len(_PREDICTIONS) >= PREDICTIONS_KEPT:
            _PREDICTIONS.clear()
        found = _PREDICTIONS[key] = predict(settings)
    return found


def _plan(endpoint: EndpointStatus | None, sample: Sample, catalog: Catalog, manual: ManualPlan | None) -> EnginePlan:
    found: list[str] = []
    assumed: list[str] = []
    record, flags = _record(endpoint), _flags(endpoint, sample)
    running, unsized = None, None
    if manual is not None:
        running = _plan(endpoint, sample, catalog, None) if endpoint else None
        gpus = (
            running.gpu_indices
            if running
            else [g.index for g in sample.gpus if g.readable][: manual_split(manual, sample, catalog)]
        )
        found.append(_by_hand(manual, len(gpus)))
        if running is not None:
            found.append(f"the engine runs {running.model or 'a model it does not name'} on {gpu_listing(gpus)}")
        spec: ModelSpec | None = manual.model
        name: str | None = manual.model.id
    else:
        gpus = _engine_gpus(endpoint, sample, found, assumed)
        name = _model_name(endpoint) or flags.get("model")
        spec = _model_spec(name, record, catalog, found, assumed)
        unsized = _unsized(_kind(endpoint, sample))
    base = EnginePlan(
        endpoint=endpoint.url if endpoint else None,
        model=spec.id if spec else name,
        gpu_indices=gpus,
        label="manual" if manual else "auto",
        found=found,
        assumed=assumed,
        launch_seen=bool(flags),
        source=manual.source if manual else None,
        running=running,
    )
    missing = unsized or _missing(spec, name, gpus, sample, catalog)
    if missing or spec is None:  # no spec is always missing: `_missing` says why
        return base.model_copy(update={"missing": missing})
    card = _card(base, sample, catalog, manual, endpoint, found, assumed)
    base = base.model_copy(update={"found": found, "assumed": assumed})
    if isinstance(card, str):
        return base.model_copy(update={"missing": card})
    if endpoint is not None and sizing(_kind(endpoint, sample)) == "sglang":
        return _sglang(base, spec, card, manual, record)
    return _predicted(base, spec, card, catalog, manual, record, flags)


def _sglang(
    base: EnginePlan, spec: ModelSpec, card: _Card, manual: ManualPlan | None, record: EngineRecord | None
) -> EnginePlan:
    """An SGLang engine planned by SGLang's rules (sglang_plan.py), on its card (`_card`, as vLLM's plans)."""
    found, assumed = list(base.found), list(base.assumed)
    running = base.running.sglang if base.running else None
    split = len(base.gpu_indices)
    try:
        update = sglang_plan(found, assumed, spec, record, card.gpu, card.capacity, split, manual, running)
    except (ValueError, ArithmeticError) as exc:  # ValidationError too: a setting it stated that cannot be sized
        why = f"cannot plan with what the engine states: {_reason(exc)}"
        return base.model_copy(update={"missing": why, "found": found, "assumed": assumed})
    return base.model_copy(update={"card": card.key, **update})


class _Card(NamedTuple):
    """The card a plan is drawn over: its catalog entry (sized as the MIG instance the engine runs on, or as the
    hand-set plan's card), its catalog key, and the capacity its bar is drawn at."""

    gpu: GpuSpec
    key: str
    capacity: int


def _card(
    base: EnginePlan,
    sample: Sample,
    catalog: Catalog,
    manual: ManualPlan | None,
    endpoint: EndpointStatus | None,
    found: list,
    assumed: list,
) -> _Card | str:
    """The plan's card (`_Card`), or why it cannot be sized."""
    card = next(g for g in sample.gpus if g.index in base.gpu_indices and g.readable)
    gpu = gpu_spec_for(card.name, card.memory_total_bytes, catalog)
    if gpu is None:
        return f"GPU {card.index} reports neither a known name nor its total"
    _gpu_fact(card, gpu.key, catalog, found, assumed)
    card_key = gpu.key
    instance_bytes = None
    on = _mig_instance(endpoint, sample, card) if manual is None else None
    if on is not None:  # planned against its MIG GPU instance, as the fleet plans it (mig_plan.py)
        sized = _instance_gpu(gpu, on, sample.source, found, assumed)
        if isinstance(sized, str):
            return sized
        gpu, instance_bytes = sized, sized.capacity_bytes
    if manual is not None and manual.gpu is not None:
        gpu = manual.gpu  # sized as the plan was made: a plan for another card is a plan_mismatch
    return _Card(gpu, card_key, instance_bytes or card.memory_total_bytes or gpu.capacity_bytes)


def _by_hand(manual: ManualPlan, engine_split: int) -> str:
    """The hand-set plan in one line: model, weight format, KV cache, split."""
    split = manual.tp or max(1, engine_split)
    return (
        f"plan set by hand: {manual.model.id}, weights {manual.quantization or 'as the checkpoint ships them'}, "
        f"KV cache {manual.kv_cache_dtype}, split over {split} GPU(s) (it wins over the one made from the engine)"
    )


def _missing(spec: ModelSpec | None, name: str | None, gpus: list[int], sample: Sample, catalog: Catalog) -> str | None:
    """Why no prediction can be made, or None."""
    if spec is None:
        if name:
            near = closest(catalog.nearest_models(name))
            return f"model {name!r} is not in the catalog or the local HF cache (unknown model){near}"
        return "the engine has not said which model it serves"
    if not gpus:
        return "no process of this engine holds GPU memory now"
    if not any(g.index in gpus and g.readable for g in sample.gpus):
        return "none of the engine's GPUs answers NVML here"
    return None


def _predicted(
    base: EnginePlan,
    spec: ModelSpec,
    card: _Card,
    catalog: Catalog,
    manual: ManualPlan | None,
    record: EngineRecord | None,
    flags: dict,
) -> EnginePlan:
    """A vLLM engine planned by vLLM's rules on its card (`_card`): the hand-set plan's settings, else the
    ones its launch and metrics state."""
    found, assumed = list(base.found), list(base.assumed)
    gpu = card.gpu
    try:
        if manual is not None:
            facts = plausible(record) if record else None
            max_len, block = (facts.max_model_len, facts.block_size) if facts else (None, None)
            settings = manual_settings(manual, gpu, catalog, len(base.gpu_indices), max_len, block)
            users = manual.users
        else:
            unknown: list[str] = []
            auto = auto_settings(spec, gpu, len(base.gpu_indices), record, flags, found, assumed, unknown)
            if auto is None:
                return base.model_copy(update={"missing": "; ".join(unknown), "found": found, "assumed": assumed})
            settings = auto
            users = 1
            assumed.append("1 conversation at the max length (set a plan with --users for more)")
            defaulted = f"{LABELS['max_model_len']} {auto.max_model_len} (the default)"
            base = base.model_copy(update={"context_assumed": defaulted in assumed})
        prediction = predicted(settings)
    except (ValueError, ArithmeticError) as exc:  # ValidationError too: a fact from outside it cannot size
        return base.model_copy(
            update={
                "missing": f"cannot plan with what the engine states: {_reason(exc)}",
                "found": found,
                "assumed": assumed,
            }
        )
    title = f"{spec.id} on {settings.tp} GPU(s), vLLM {settings.version}"
    overlay = overlay_from_engine(prediction, card.capacity, base.label, title)
    measured_with = base.running.settings if base.running else settings
    kv_per_token = _kv_bytes(measured_with) if measured_with else None
    overlay = overlay.model_copy(update={"measured_kv_bytes_per_token": kv_per_token})
    return base.model_copy(
        update={
            "card": card.key,
            "users": users,
            "settings": settings,
            "prediction": prediction,
            "overlay": overlay,
            "found": found,
            "assumed": assumed,
        }
    )


def _mig_instance(endpoint: EndpointStatus | None, sample: Sample, card: GpuRecord) -> MigInstance | str | None:
    """The MIG GPU instance of `card` the engine runs on: the one its device selectors name (a node read from
    Prometheus: the instance its pod holds) or its processes are on (NVML); why it is not known on a card in
    MIG mode; None on a card that is not in MIG mode."""
    if endpoint is None or not card.mig_enabled:
        return None
    named = device_slices(endpoint.devices, [card]).get(card.index) or set()
    pids = set(endpoint.pids)
    on = {*named, *(p.gpu_instance_id for p in sample.processes if p.pid in pids and p.gpu_index == card.index)}
    held = [m for m in card.mig_instances if m.gpu_instance_id is not None and m.gpu_instance_id in on]
    if len(held) == 1:
        return held[0]
    return held_instances(len(held)) if held else NO_INSTANCE


def _instance_gpu(gpu: GpuSpec, on: MigInstance | str, source: str, found: list, assumed: list) -> GpuSpec | str:
    """The card's catalog entry sized as the instance (mig_plan.instance_gpu), or why it cannot be."""
    if isinstance(on, str):
        return on
    why = "used or free is unknown" if on.memory_used_bytes is None or on.memory_free_bytes is None else NOT_REPORTED
    whose = "dcgm-exporter's" if source == "prometheus" else "NVML's"  # a node read from Prometheus, else NVML
    instance = None if on.gpu_instance_id is None else str(on.gpu_instance_id)
    return instance_gpu(gpu, instance, on.memory_total_bytes, profile_of(on.name), why, whose, found, assumed)


def _record(endpoint: EndpointStatus | None) -> EngineRecord | None:
    """The endpoint's first record that names a model, else its first record."""
    if endpoint is None or not endpoint.records:
        return None
    return next((r for r in endpoint.records if r.model), endpoint.records[0])


def _model_name(endpoint: EndpointStatus | None) -> str | None:
    record = _record(endpoint)
    return record.model if record else None


def _flags(endpoint: EndpointStatus | None, sample: Sample) -> dict[str, str]:
    """Launch flags from the command line of the engine's first process the host can see, read as the engine
    that command line starts reads them."""
    for argv in _command_lines(endpoint, sample):
        kind = started_by(argv)
        flags = kind.flags(argv) if kind else launch_flags(argv)
        if flags:
            return flags
    return {}


def _command_lines(endpoint: EndpointStatus | None, sample: Sample) -> list[list[str]]:
    pids = set(endpoint.pids) if endpoint else set()
    return [p.cmdline for p in sample.processes if p.pid in pids and p.cmdline]


def _kind(endpoint: EndpointStatus | None, sample: Sample) -> str | None:
    """The engine kind: what its metrics say, else the engine its command line starts; None when neither says."""
    record = _record(endpoint)
    if record is not None:
        return record.engine
    kind = next((k for argv in _command_lines(endpoint, sample) if (k := started_by(argv))), None)
    return kind.kind if kind else None


def sizing(kind: str | None) -> str | None:
    """The startup model that sizes this engine kind (`vllm`, `sglang`), None where none does; `vllm` where no
    kind is known (an endpoint given by hand that has not answered: sized as vLLM, and said to be assumed)."""
    entry = registered(kind)
    return "vllm" if kind is None else entry.sizing if entry else None


def _unsized(kind: str | None) -> str | None:
    """Why this engine kind gets no plan, or None when a startup model sizes it."""
    if sizing(kind) is not None:
        return None
    entry = registered(kind)
    label = entry.label if entry else repr(kind)
    return f"{label} engines are not sized; the plan shows the measurement only"


def _engine_gpus(endpoint: EndpointStatus | None, sample: Sample, found: list[str], assumed: list[str]) -> list[int]:
    if endpoint is None:
        return []
    gpus = endpoint_gpus(sample, endpoint)
    if gpus:
        found.append(f"split over {len(gpus)} GPU(s): its processes hold memory on {gpu_listing(gpus)}")
    elif not endpoint.pids and len(sample.engines) == 1:
        gpus = sorted({p.gpu_index for p in sample.processes if looks_like_engine(p.name, p.cmdline)})
        if gpus:
            assumed.append(f"the engine is the engine-like process on {gpu_listing(gpus)} (no pid was given)")
    return gpus


def _model_spec(
    name: str | None, record: EngineRecord | None, catalog: Catalog, found: list, assumed: list
) -> ModelSpec | None:
    if name is None:
        return None
    where = "/metrics" if record is not None and record.model else "the command line"
    return model_spec(name, where, catalog, found, assumed)


def model_spec(name: str, where: str, catalog: Catalog, found: list, assumed: list) -> ModelSpec | None:
    """The model an engine names (`where` says where it was read), found by the catalog's one resolver: an
    entry the name is listed under, else a cached Hugging Face config of that id, else the entry its last part
    or its quantized copy's name reads as; None when none is found."""
    found.append(f"model {name} (from {where})")
    try:
        match: ModelMatch | None = catalog.match_model(name)
    except LookupFailed:
        match = None
    if match is not None and match.exact:
        return _from_catalog(match, found)
    path = find_cached(name)  # by id only: a name from an engine or a recording never picks a local file
    if path is None:
        return _from_catalog(match, found) if match is not None else None
    try:
        spec, warnings = model_from_config(load_config(path), name)
    except CatalogError as exc:
        assumed.append(f"architecture unknown: {exc}")
        return None
    found.append(f"architecture from {path}")
    assumed.extend(warnings)
    return spec


def _from_catalog(match: ModelMatch, found: list) -> ModelSpec:
    found.append(f"architecture from the catalog ({match.note})" if match.note else "architecture from the catalog")
    return match.spec


def _gpu_fact(card: GpuRecord, key: str, catalog: Catalog, found: list, assumed: list) -> None:
    if card.name and catalog.gpu_by_nvml_name(card.name) is not None:
        found.append(f"GPU {key} (NVML name {card.name})")
    else:
        assumed.append(f"a card of the {key} size NVML reports (its name is not in the catalog)")


def auto_settings(
    spec: ModelSpec,
    gpu,
    split: int,
    record: EngineRecord | None,
    flags: dict,
    found: list,
    assumed: list,
    unknown: list,
) -> EngineSettings | None:
    """The engine's settings from its metrics, else its command line, else the defaults; None when a fact
    was stated only in values that cannot be true (each said in `unknown`)."""
    tp = max(1, split)
    pick = _Picker(record, found, assumed, unknown)
    values = {
        "utilization": pick("gpu_memory_utilization", number(flags, "--gpu-memory-utilization", float), 0.9),
        "block_size": pick("block_size", number(flags, "--block-size"), 64 if spec.mla else 16),
        "kv_cache_dtype": pick("cache_dtype", flags.get("--kv-cache-dtype"), "auto"),
        "max_model_len": pick("max_model_len", number(flags, "--max-model-len"), spec.max_context),
    }
    if unknown:
        return None
    quantization = flags.get("--quantization")
    if quantization:
        found.append(f"quantization {quantization} (from the command line)")
    else:
        assumed.append("weights as the checkpoint ships them (no --quantization seen)")
    assumed.append(f"vLLM {DEFAULT_VERSION} sizing rules (the metrics do not name the release)")
    limits = _mm_limits(flags, found, assumed) if spec.vision else None
    return EngineSettings(model=spec, gpu=gpu, tp=tp, quantization=quantization, limit_mm_per_prompt=limits, **values)


def _mm_limits(flags: dict, found: list, assumed: list) -> dict[str, int] | None:
    """`--limit-mm-per-prompt` from the command line (0 for every modality: no vision tower), said found; an
    unreadable one is said and vLLM's default kept."""
    try:
        limits = limits_from_flags(flags)
    except PlanInputError as exc:
        assumed.append(f"{literal(str(exc))}: each modality at vLLM's default of 999 items")
        return None
    if limits is not None:
        shown = ", ".join(f"{literal(k)} {v}" for k, v in limits.items())
        found.append(f"limit_mm_per_prompt {shown} (from the command line)")
    return limits


class _Picker:
    """One fact: the engine's own report, else its command line, else the default (said to be assumed).
    A value that cannot be true is skipped; when every value stated for a fact was such, the fact is
    unknown (said in `unknown`), never silently replaced by the default."""

    def __init__(self, record: EngineRecord | None, found: list, assumed: list, unknown: list):
        self.record, self.found, self.assumed, self.unknown = record, found, assumed, unknown

    def __call__(self, field: str, flagged, default):
        what = LABELS[field]
        stated = [
            (getattr(self.record, field) if self.record else None, "the engine's metrics"),
            (flagged, "the command line"),
        ]
        refused = []
        dropped = self.record.dropped.get(field) if self.record else None
        if dropped:  # the record refused it as it arrived (NaN, infinite, negative)
            refused.append(f"the engine's metrics state a value that is {dropped}")
        for value, where in stated:
            if value is None:
                continue
            why = why_implausible(field, value)
            if why is None:
                self.found.append(f"{what} {value} (from {where})")
                return value
            refused.append(f"{where} state {shown(value)}, {why}")
        if refused:
            self.unknown.append(f"{what} unknown: {' and '.join(refused)}")
            return None
        self.assumed.append(f"{what} {default} (the default)")
        return default


def _reason(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    return " ".join(str(exc).split())[:200]


class Planned(NamedTuple):
    """What a plan predicts, whichever engine's rules made it (vLLM's or SGLang's): the numbers the findings,
    `check --json` and the exporter hold against what the engine measures. Sizes are bytes on one GPU."""

    pool_tokens: int
    context_len: int
    weights_bytes: int
    kv_cache_bytes: int
    before_weights_bytes: int
    """What the process holds before its weights load (CUDA context, non-torch memory)."""
    overhead_bytes: int
    """What it holds beside its weights, KV pool and activations (context, workspaces, CUDA graphs)."""
    activation_bytes: int
    failures: list[str]
    warnings: list[str]
    assumed: list[str]
    overhead_named: str = "context, non-torch memory and CUDA graphs"
    """What `overhead_bytes` holds, in words."""


def planned(plan: EnginePlan) -> Planned | None:
    """The plan's prediction in engine-neutral terms; None where none was made."""
    p, sg = plan.prediction, plan.sglang
    if p is not None:
        before = CUDA_CONTEXT_BYTES + p.non_torch_bytes
        return Planned(
            *(p.kv_cache_tokens, p.max_model_len, p.weights_bytes, p.kv_cache_bytes, before),
            *(before + p.cudagraph_bytes, p.activation_peak_bytes, p.failures, p.warnings, p.assumed),
        )
    if sg is None or plan.sglang_settings is None:
        return None
    before = context_bytes(plan.sglang_settings, sg)
    overhead = before + sg.req_to_token_bytes + sg.workspace_bytes + sg.cudagraph_bytes
    return Planned(
        *(sg.kv_cache_tokens, sg.context_len, sg.weights_bytes, sg.kv_cache_bytes, before, overhead),
        *(sg.activation_bytes, sg.failures, sg.warnings, sg.assumed),
        "context, request table, workspace and CUDA graphs",
    )


def sized_with(plan: EnginePlan) -> EngineSettings | SglangSettings | None:
    """The settings the plan was sized with: vLLM's, else SGLang's; both name the model, weights, KV cache,
    split and card alike."""
    return plan.settings or plan.sglang_settings


def split_of(plan: EnginePlan) -> int | None:
    """The plan's tensor-parallel split; None without settings."""
    settings = sized_with(plan)
    return settings.tp if settings else None


def kv_bytes_per_token(plan: EnginePlan) -> int | None:
    """KV cache bytes one token takes on one GPU under the plan's settings (SGLang's cell); None without."""
    if plan.sglang is not None:
        return plan.sglang.cell_bytes
    return _kv_bytes(plan.settings) if plan.settings else None


def _kv_bytes(settings: EngineSettings) -> int:
    return settings.model.layers * layer_bytes_per_token(settings.model, settings.kv_cache_dtype, settings.tp)


def measured_facts(plan: EnginePlan) -> EnginePlan:
    """The plan whose facts are the engine's own: the one made from the engine beside a hand-set plan."""
    return plan.running or plan


_KEPT = ("model", "quantization", "kv_cache_dtype", "tp", "gpu")
"""What a plan made by hand from an engine keeps of its settings, vLLM's or SGLang's (fields of the same names)."""


def as_manual(plan: EnginePlan) -> ManualPlan | None:
    """What an engine runs as a plan a person can change (the planner screen opens on it): the settings the
    plan was predicted with, the running engine's own beside a hand-set plan; None where none was made."""
    facts = measured_facts(plan)
    settings, sg = facts.settings, facts.sglang_settings
    if settings is not None:
        kept = {name: getattr(settings, name) for name in (*_KEPT, "max_model_len", "utilization", "version")}
    elif sg is not None and facts.sglang is not None:  # its length as SGLang sized it; its release is not vLLM's
        kept = {**{name: getattr(sg, name) for name in _KEPT}, "max_model_len": facts.sglang.context_len}
    else:
        return None
    return ManualPlan(**kept, users=facts.users, source="planner screen")


def drawn_plans(plans: list[EnginePlan]) -> dict[int, EnginePlan]:
    """The plan drawn over each GPU: the first with an overlay that claims it (the TUI draws it, the
    exporter publishes its bands)."""
    drawn: dict[int, EnginePlan] = {}
    for plan in plans:
        for index in plan.gpu_indices[: split_of(plan)]:
            if plan.overlay is not None:
                drawn.setdefault(index, plan)
    return drawn


def plan_by_gpu(plans: list[EnginePlan]) -> dict[int, GpuOverlay]:
    """The overlay drawn over each GPU (`drawn_plans`). Each overlay carries the running model's KV bytes
    per token, so the measured pool is counted with the engine's facts, not the plan's."""
    return {index: plan.overlay for index, plan in drawn_plans(plans).items() if plan.overlay is not None}


__all__ = [
    "DEFAULT_VERSION",
    "EnginePlan",
    "Planned",
    "as_manual",
    "auto_settings",
    "drawn_plans",
    "engine_plans",
    "kv_bytes_per_token",
    "measured_facts",
    "model_spec",
    "plan_by_gpu",
    "planned",
    "sized_with",
    "sizing",
    "split_of",
]
