"""Plans for the fleet's engines, made from the catalog by the single-node planner's own rules (autoplan.py),
with what Prometheus says standing in for what a node's engine says (served model, cache settings, joined
GPUs and card). One plan per model, settings, card and split; an exporter's plan is kept; an engine on a MIG
GPU instance is planned against the instance, never the whole card. docs/design/fleet.md says how."""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from gpumem_tui.catalog import Catalog, GpuSpec, LookupFailed, ModelSpec
from gpumem_tui.diagnosis.autoplan import auto_settings, model_spec, sizing
from gpumem_tui.diagnosis.mig_plan import NO_INSTANCE, NOT_REPORTED, held_instances, instance_gpu
from gpumem_tui.diagnosis.overlays import gpu_spec_for
from gpumem_tui.diagnosis.sglang_plan import UNSIZED
from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.planner.kv import layer_bytes_per_token
from gpumem_tui.planner.overlay import CUDA_CONTEXT_BYTES, overlay_from_engine
from gpumem_tui.planner.vllm import predict
from gpumem_tui.records import Record
from gpumem_tui.sources.prometheus.records import FleetEngine, FleetGpu, FleetNode, FleetPlan, FleetSample

Made = tuple[FleetPlan | None, str | None, list[str], list[str]]
"""A plan (or None and why not), and the facts it found and assumed."""


class Inputs(NamedTuple):
    """What an engine's plan is made of besides the engine and the catalog."""

    card: str | None
    total: int | None
    """Its card (dcgm-exporter's modelName) and a total read for one of its GPUs."""
    on: FleetGpu | str | None
    """The MIG GPU instance it runs on, or why that is not known (None: not on one)."""
    sharing: int
    """The engines of its pod (data-parallel engines share its GPUs)."""


class AliasError(ValueError):
    """A --model-alias that is not SERVED=ORG/MODEL, or names a model the catalog does not hold."""


def parse_aliases(texts: Iterable[str], catalog: Catalog) -> dict[str, str]:
    """`--model-alias SERVED=ORG/MODEL` (repeatable) -> served name -> the catalog model's id."""
    aliases = {}
    for text in texts:
        served, equals, model = text.partition("=")
        if not equals or not served.strip() or not model.strip():
            raise AliasError(f"--model-alias {text!r}: expected SERVED=ORG/MODEL, as llama=meta-llama/Llama-3.1-8B")
        try:
            aliases[served.strip()] = catalog.model(model.strip()).id
        except LookupFailed as exc:
            raise AliasError(f"--model-alias {text}: {exc}") from None
    return aliases


class PlansKept:
    """What one planner of samples keeps from the last (the fleet screen's, refresh after refresh): each engine's
    planned record, by the very engine record it was made of and what else its plan is made of (its card and
    total, its MIG instance, the engines sharing its pod); and the last list of them. At 10,000 engines, a refresh
    whose engines the reader kept (a read by exception) copies none: 0.45 s of the refresh, and the judge then
    keeps its answers, which it keeps by the list (kept.py)."""

    def __init__(self) -> None:
        self.planned: dict[int, tuple[FleetEngine, Inputs, FleetEngine]] = {}
        self.engines: list[FleetEngine] = []
        self.of: tuple[list[FleetEngine], list[FleetNode], list[FleetGpu]] = ([], [], [])
        """The last sample's engines, nodes and GPUs read one by one, all that plans are made of besides the
        catalog: where the engines and the nodes are the very records, the planned list is the
        last one, with no engine looked at (the GPUs compared by value: few, and new records each read)."""

    def same(self, sample: FleetSample) -> bool:
        engines, nodes, gpus = self.of
        if len(sample.engines) != len(engines) or len(sample.nodes) != len(nodes) or sample.gpus != gpus:
            return False
        return all(map(operator.is_, sample.engines, engines)) and all(map(operator.is_, sample.nodes, nodes))


def plan_fleet(
    sample: FleetSample, catalog: Catalog, aliases: Mapping[str, str] | None = None, kept: PlansKept | None = None
) -> FleetSample:
    """The sample with a plan for each engine that has none yet (an exporter's plan is kept); `kept`: what the
    last sample's planning kept, where the caller plans sample after sample with one catalog and aliases."""
    if kept is None:
        kept = PlansKept()  # one sample: nothing kept from before
    elif kept.same(sample):
        return sample.model_copy(update={"engines": kept.engines})
    planner = _Planner(sample, catalog, aliases or {})
    last, now = kept.planned, {}
    engines = []
    for e in sample.engines:
        if e.plan_from is not None:
            engines.append(e)
            continue
        inputs = planner.inputs(e)
        before = last.get(id(e))
        done = (
            before[2] if before is not None and before[0] is e and before[1] == inputs else planner.planned(e, inputs)
        )
        now[id(e)] = (e, inputs, done)
        engines.append(done)
    if len(engines) == len(kept.engines) and all(map(operator.is_, engines, kept.engines)):
        engines = kept.engines  # the very list: what the judge keeps its answers by
    kept.planned, kept.engines, kept.of = now, engines, (sample.engines, sample.nodes, sample.gpus)
    return sample.model_copy(update={"engines": engines})


Facts = tuple[ModelSpec | None, list[str], list[str]]


class _Planner:
    """One sample's planning: each served name looked up once, each plan made once, GPUs and nodes indexed
    (a thousand engines over eight thousand GPUs are not searched engine by engine)."""

    def __init__(self, sample: FleetSample, catalog: Catalog, aliases: Mapping[str, str]) -> None:
        self.catalog, self.aliases = catalog, aliases
        self.cards = {g.uuid or g.index or "?": g for g in sample.gpus if g.card and g.gpu_instance is None}
        self.instances: dict[str, list[FleetGpu]] = defaultdict(list)
        for g in sample.gpus:
            if g.gpu_instance is not None and g.uuid:
                self.instances[g.uuid].append(g)
        self.nodes = {n.name: n for n in sample.nodes}
        self.specs: dict[str, Facts] = {}
        self.made: dict[tuple, Made] = {}
        self.gpus: dict[tuple[str | None, int | None], tuple[GpuSpec | None, bool]] = {}
        self.per_pod: dict[tuple[str | None, str], int] = defaultdict(int)
        for e in sample.engines:
            if e.pod is not None:
                self.per_pod[(e.namespace, e.pod)] += 1

    def spec(self, served: str) -> Facts:
        if served not in self.specs:
            found: list[str] = []
            assumed: list[str] = []
            spec: ModelSpec | None
            if served in self.aliases:
                spec = self.catalog.model(self.aliases[served])
                found.append(f"model {spec.id} (served as {served}, by --model-alias)")
            else:
                spec = model_spec(served, "vLLM's model_name label", self.catalog, found, assumed)
            self.specs[served] = (spec, found, assumed)
        return self.specs[served]

    def card(self, engine: FleetEngine) -> tuple[str | None, int | None]:
        """The card of the engine's GPUs (dcgm-exporter's modelName) and a total read for one of them: from its
        GPUs read one by one, else from its node when the node has one card model."""
        mine = next((self.cards[u] for u in engine.gpus if u in self.cards), None) if self.cards else None
        if mine is not None:
            return mine.card, mine.total_bytes
        node = self.nodes.get(engine.node or "")
        if node is not None and len(node.cards) == 1:
            card = next(iter(node.cards))
            return (None if card == "?" else card), None
        return None, None

    def gpu(self, card: str | None, total: int | None) -> tuple[GpuSpec | None, bool]:
        """The catalog GPU for a card (by its NVML name, else its total), and whether the name found it."""
        if (card, total) not in self.gpus:
            named = card is not None and self.catalog.gpu_by_nvml_name(card) is not None
            self.gpus[(card, total)] = (gpu_spec_for(card, total, self.catalog), named)
        return self.gpus[(card, total)]

    def inputs(self, engine: FleetEngine) -> Inputs:
        sharing = self.per_pod.get((engine.namespace, engine.pod or ""), 1) if engine.pod else 1
        return Inputs(*self.card(engine), self.instance(engine), sharing)

    def planned(self, engine: FleetEngine, inputs: Inputs) -> FleetEngine:
        """The engine with its plan, made of `inputs` (`self.inputs(engine)`)."""
        if sizing(engine.kind) != "vllm":  # sized by other rules than vLLM's (sglang_plan.py)
            return _unplanned(engine, UNSIZED)
        served = engine.model_name
        spec, found_model, assumed_model = self.spec(served)
        if spec is None:
            return _unplanned(
                engine,
                f"model {served!r} is not in the catalog (unknown model): measured only; name it with "
                f"--model-alias {served}=ORG/MODEL or add it with --catalog DIR",
            )
        found, assumed = list(found_model), list(assumed_model)
        card, total, on, sharing = inputs
        gpu, named = self.gpu(card, total)
        if gpu is None:
            if card is None and engine.joined == "not joined":
                return _unplanned(engine, "it is not joined to its GPUs, so their card is not known")
            why = "no card is known for its GPUs" if card is None else f"its card {card!r} is not in the catalog"
            return _unplanned(engine, f"{why} (dcgm-exporter's modelName), and no total memory was read")
        if named:
            found.append(f"GPU {gpu.key} (dcgm-exporter's modelName {card})")
        else:
            assumed.append(f"a card of the {gpu.key} size dcgm-exporter reports (its name is not in the catalog)")
        if on is not None:
            sized = _instance_gpu(gpu, on, found, assumed)
            if isinstance(sized, str):
                return _unplanned(engine, sized)
            gpu = sized
        tp = _split(engine, sharing, found, assumed)
        settings = (engine.gpu_memory_utilization, engine.block_size, engine.cache_dtype)
        key = (spec.id, gpu.key, gpu.total_mib, tp, *settings)
        if key not in self.made:
            self.made[key] = _make(spec, gpu, tp, engine)
        plan, missing, found_too, assumed_too = self.made[key]
        if plan is None:
            return _unplanned(engine, missing or "no plan")
        plan = plan.model_copy(update={"found": [*found, *found_too], "assumed": [*assumed, *assumed_too]})
        update = {"plan": plan, "planned_bytes": plan.per_gpu_bytes * tp, "plan_from": "catalog"}
        return engine.model_copy(update=update)

    def instance(self, engine: FleetEngine) -> FleetGpu | str | None:
        """The MIG GPU instance the engine runs on (the one its pod holds), why it is not known where its card is
        in MIG mode, or None where no GPU of it is (as read: the GPUs read one by one and the instances)."""
        if not self.instances:  # no MIG GPU instance read: none of 10^4 engines' GPUs looked up
            return None
        rows = [g for uuid in engine.gpus for g in self.instances.get(uuid, ())]
        if not rows:
            return None
        pod = f"{engine.namespace or ''}/{engine.pod}" if engine.pod else None
        held = [g for g in rows if pod is not None and pod in g.pods]
        if len(held) == 1:
            return held[0]
        if held:
            return held_instances(len(held))
        return NO_INSTANCE


def _instance_gpu(card: GpuSpec, on: FleetGpu | str, found: list[str], assumed: list[str]) -> GpuSpec | str:
    """The card's catalog entry sized as the MIG GPU instance the engine runs on, or why its size is not known."""
    if isinstance(on, str):
        return on
    why = on.unknown.get("total_bytes", NOT_REPORTED)
    profile = on.gpu_instance_profile
    return instance_gpu(card, on.gpu_instance, on.total_bytes, profile, why, "dcgm-exporter's", found, assumed)


def _make(spec: ModelSpec, gpu: GpuSpec, tp: int, engine: FleetEngine) -> Made:
    """The plan for one model, card, split and settings (the same for every engine that shares them)."""
    record = EngineRecord(
        engine="vllm",
        model=engine.model_name,
        gpu_memory_utilization=engine.gpu_memory_utilization,
        block_size=engine.block_size,
        cache_dtype=engine.cache_dtype,
    )
    found: list[str] = []
    assumed: list[str] = []
    unknown: list[str] = []
    try:
        settings = auto_settings(spec, gpu, tp, record, {}, found, assumed, unknown)
        if settings is None:
            return None, "; ".join(unknown), found, assumed
        assumed.append("1 conversation at the max length (vLLM's max_model_len is not in its metrics)")
        prediction = predict(settings)
    except (ValueError, ArithmeticError) as exc:  # ValidationError too: settings it cannot size
        return None, f"cannot plan with what the engine states: {' '.join(str(exc).split())[:200]}", found, assumed
    overlay = overlay_from_engine(prediction, gpu.capacity_bytes, "auto", f"{spec.id} on {tp} GPU(s)")
    plan = FleetPlan(
        model=spec.id,
        card=gpu.key,
        tensor_parallel=tp,
        per_gpu_bytes=overlay.engine_bytes,
        weights_bytes=prediction.weights_bytes,
        overhead_bytes=CUDA_CONTEXT_BYTES + prediction.non_torch_bytes + prediction.cudagraph_bytes,
        activation_peak_bytes=prediction.activation_peak_bytes,
        kv_cache_tokens=prediction.kv_cache_tokens,
        kv_bytes_per_token=spec.layers * layer_bytes_per_token(spec, settings.kv_cache_dtype, settings.tp),
        max_model_len=prediction.max_model_len,
        failures=prediction.failures,
        warnings=prediction.warnings,
    )
    return plan, None, found, assumed


def _unplanned(engine: FleetEngine, why: str) -> FleetEngine:
    return engine.model_copy(update={"unknown": {**engine.unknown, "planned_bytes": why}})


def _split(engine: FleetEngine, sharing: int, found: list[str], assumed: list[str]) -> int:
    """Its tensor-parallel size: the GPUs joined to it; `sharing` data-parallel engines of one pod share its
    GPUs evenly (assumed: vLLM gives each its own equal set)."""
    count = engine.gpu_count or 0
    if engine.joined != "not joined" and count and sharing > 1 and count % sharing == 0:
        assumed.append(
            f"split over {count // sharing} GPU(s): the pod's {count} GPU(s) shared by its {sharing} data-parallel "
            "engines"
        )
        return count // sharing
    if engine.joined == "found" and count:
        found.append(f"split over {count} GPU(s): {engine.join_reason}")
        return count
    if engine.joined == "assumed" and count:
        assumed.append(f"split over {count} GPU(s): {engine.join_reason}")
        return count
    assumed.append("1 GPU (tensor parallel 1): the engine is not joined to its GPUs")
    return 1


class ModelMemory(Record):
    """One served model across the fleet: its GPU memory used (dcgm-exporter, over the GPUs joined to its
    engines) and planned (its engines' plans); the screen's model table and `fleet check --json` both show it."""

    model_name: str
    engines: list[FleetEngine]
    gpus: list[str]
    """The GPUs joined to its engines that were read one by one."""
    used_bytes: int | None = None
    planned_bytes: int | None = None
    plan_from: list[str] = []
    """Where its engines' plans came from (`catalog`, `exporter`), each once."""
    unknown: dict[str, str] = {}


def model_memory(sample: FleetSample) -> list[ModelMemory]:
    """Per model, by name: used vs planned; a figure not known for every engine is None, with the reason."""
    by_model: dict[str, list[FleetEngine]] = defaultdict(list)
    for engine in sample.engines:
        by_model[engine.model_name].append(engine)
    models = []
    for model, engines in sorted(by_model.items()):
        unknown: dict[str, str] = {}
        gpus = sorted({g for e in engines for g in e.gpus})
        used = _model_used(engines, sample) if gpus else None
        if not gpus:
            unknown["used_bytes"] = "no engine of the model is joined to its GPUs (fleet finding not_joined)"
        elif used is None:
            unknown["used_bytes"] = "a GPU of its engines has no reading of FB_USED"
        planned = _total([e.planned_bytes for e in engines])
        if planned is None:
            unplanned = [e for e in engines if e.planned_bytes is None]
            why = unplanned[0].unknown.get("planned_bytes", "no plan was made for it")
            unknown["planned_bytes"] = f"{len(unplanned)} of {len(engines)} engine(s) have no plan: {why}"
        models.append(
            ModelMemory(
                model_name=model,
                engines=engines,
                gpus=gpus,
                used_bytes=used,
                planned_bytes=planned,
                plan_from=sorted({e.plan_from for e in engines if e.plan_from is not None}),
                unknown=unknown,
            )
        )
    return models


def _model_used(engines: list[FleetEngine], sample: FleetSample) -> int | None:
    """The memory used on a model's GPUs, node by node: the sum of its GPUs where they were read one by one,
    else the node's own sum where the model's engines hold every GPU of it (the overview reads GPU by GPU
    only the nodes that need a look, a node shared with other work among them); unknown otherwise. On a MIG
    card, the GPU instances its engines' pods hold (the card's figure counts the other instances too)."""
    rows: dict[str, list[FleetGpu]] = defaultdict(list)
    for g in sample.gpus:
        rows[g.uuid or g.index or "?"].append(g)
    nodes = {n.name: n for n in sample.nodes}
    mine: dict[str | None, set[str]] = defaultdict(set)
    for engine in engines:
        mine[engine.node].update(engine.gpus)
    pods = {f"{e.namespace or ''}/{e.pod}" for e in engines if e.pod}
    values: list[int | None] = []
    for node, gpus in mine.items():
        if all(g in rows for g in gpus):
            values += [_used_of(rows[g], pods) for g in gpus]
        elif node in nodes and len(gpus) == nodes[node].gpus:
            values.append(nodes[node].used_bytes)
        else:
            return None
    return _total(values)


def _used_of(rows: list[FleetGpu], pods: set[str]) -> int | None:
    """One GPU's memory used for the pods: the MIG instances they hold, else the card's own figure."""
    held = [g for g in rows if g.gpu_instance is not None and pods & set(g.pods)]
    if held:
        return _total([g.used_bytes for g in held])
    card = [g for g in rows if g.gpu_instance is None]
    return card[0].used_bytes if card else None


def _total(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v or 0 for v in values)
