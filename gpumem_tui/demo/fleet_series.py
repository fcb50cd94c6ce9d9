"""A simulated fleet as the series Prometheus would hold: dcgm-exporter's and vLLM's, from the demo scenarios.

Each node runs one scenario on the simulated clock; every `step_s` its sample becomes what dcgm-exporter
(FB used/free/reserved in MiB, its labels) and each vLLM engine (`vllm:*` gauges, the preemption counter,
`vllm:cache_config_info`) would have been scraped as, plus `up` of each target. A node is labelled as one of
the setups of reference/fleet.md 1.2: Kubernetes with `exported_pod` (ServiceMonitor, honorLabels false),
Kubernetes with plain `pod` (honorLabels true: unallocated GPUs carry the exporter's own pod), or bare metal
(no pod labels; vLLM's `instance` names the host). The output is OpenMetrics text for
`promtool tsdb create-blocks-from openmetrics` (timestamps in seconds, a final `# EOF`)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Literal, NamedTuple

from gpumem_tui.catalog import Catalog, load_catalog
from gpumem_tui.demo.clock import ManualClock
from gpumem_tui.demo.engine_exposition import ENGINE_INDEX, POINTS
from gpumem_tui.demo.engine_state import EngineState
from gpumem_tui.demo.fleet_moment import Endpoint, Moment, of_sample
from gpumem_tui.demo.fleet_node import FleetNode
from gpumem_tui.demo.plan import scenario_plan
from gpumem_tui.demo.scenario import load_scenario
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.forensics import Investigation
from gpumem_tui.export.evaluation import Evaluation
from gpumem_tui.export.server import node_families
from gpumem_tui.export.workloads import kept
from gpumem_tui.models import Sample

MIB = 2**20
Setup = Literal["exported_pod", "pod", "bare"]
Walk = list[tuple[Moment, Sample | None, Mapping[str, EngineState]]]
"""A node over the run: at each step what its series read, its whole sample where its exporter is judged, and
what its engines report then (by their URL)."""
Walks = dict[tuple[str, tuple[float, ...], bool], Walk]


class FleetNodeSpec(NamedTuple):
    """One simulated node of the fleet (a named tuple: defined at every fleet command's start, where a frozen
    dataclass costs ten times as much)."""

    name: str
    scenario: str
    setup: Setup = "exported_pod"
    node_label: str = "Hostname"
    """`Hostname` (dcgm-exporter up to 4.8.2) or `hostname` (later)."""
    reserved: bool = True
    """Whether the exporter exports DCGM_FI_DEV_FB_RESERVED (its default list has it from 4.4.0)."""
    until_s: float | None = None
    """The node stops reporting after this offset (its exporter died): a stale node."""
    settings: Mapping[str, str] = MappingProxyType({})
    """cache_config_info labels set otherwise on this node's engines (one model served two ways)."""
    exporter: bool = False
    """The node also runs `gpumem-tui export`: every series it serves (GPU memory, other processes, engines'
    KV, plans, findings), judged against the scenario's plan as `export --demo` judges it and written by the
    exporter's own code (`export.server.node_families`), scraped with `honor_labels`."""
    dcgm: bool = True
    """dcgm-exporter runs on the node (False: only `gpumem-tui export` says its GPU memory)."""
    vllm: bool = True
    """Prometheus scrapes the engines' own `/metrics` (False: only `gpumem-tui export` says their KV cache)."""
    virtual_gpus: bool = False
    """dcgm-exporter's `--kubernetes-virtual-gpus` (time-slicing): each GPU's series once at device level
    (no pod labels), then FB_USED once per pod with the pod's own memory, and every other field repeated
    once per pod (reference/fleet.md 1.3). Kubernetes setups only."""


def fleet_series(specs: Iterable[FleetNodeSpec], end_s: float, step_s: float = 15.0) -> str:
    """OpenMetrics text of the fleet from offset 0 to `end_s` (seconds of the scenarios' clock)."""
    families: dict[str, list[str]] = defaultdict(list)
    kinds: dict[str, str] = {}
    walks: Walks = {}
    catalog = load_catalog()
    for number, spec in enumerate(specs):
        for name, kind, labels, value, at in _node_series(number, spec, end_s, step_s, walks, catalog):
            kinds[name] = kind
            families[name].append(f"{_sample_name(name, kind)}{{{_labels(labels)}}} {_value(value)} {_value(at)}")
    lines = []
    for name, samples in families.items():
        lines.append(f"# TYPE {name} {kinds[name]}")
        lines.extend(samples)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def series_rows(specs: Iterable[FleetNodeSpec], end_s: float, step_s: float = 15.0):
    """(series name, labels, value, unix seconds) of every sample of the fleet, as a scrape would name them
    (a counter's name ends in `_total`): what `fleet_answers` reads in place of a Prometheus."""
    walks: Walks = {}
    catalog = load_catalog()  # once for every node (loading it again re-reads and hashes its files to key it)
    for number, spec in enumerate(specs):
        for name, kind, labels, value, at in _node_series(number, spec, end_s, step_s, walks, catalog):
            yield _sample_name(name, kind), labels, value, at


def sample_at(scenario: str, offsets: list[float]) -> list[Sample]:
    """The scenario's samples at these offsets, walked in order as the demo does (demo/fleet_node.py)."""
    return [sample for _, sample, _ in _walk(scenario, offsets, judged=True) if sample is not None]


def _walked(scenario: str, offsets: list[float], judged: bool, walks: Walks, catalog: Catalog) -> Walk:
    """`_walk`, once per scenario, offsets and way of reading within one fleet: two nodes that run one scenario
    for as long sample alike (each is then named and numbered as its own, `_on_node`)."""
    key = (scenario, tuple(offsets), judged)
    if key not in walks:
        walks[key] = list(_walk(scenario, offsets, judged, catalog))
    return walks[key]


def _walk(
    scenario: str, offsets: list[float], judged: bool, catalog: Catalog | None = None
) -> Iterator[tuple[Moment, Sample | None, Mapping[str, EngineState]]]:
    """Each step's moment, the whole sample where the node's exporter is `judged` (its engines scraped), and
    what each of its engine endpoints reports then (by URL)."""
    clock = ManualClock()
    node = FleetNode(scenario, clock, scrape=judged, catalog=catalog)
    try:
        for offset in offsets:
            clock.set(offset)
            if judged:
                sample = node.sample()
                yield of_sample(sample), sample, node.reports
            else:
                yield node.moment(), None, node.reports
    finally:
        node.close()


def _sample_name(name: str, kind: str) -> str:
    return f"{name}_total" if kind == "counter" else name


def _labels(labels: Mapping[str, str]) -> str:
    return ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _value(value: float) -> str:
    """A number in full (`1767225600`, `0.0686`), `NaN` as OpenMetrics writes it."""
    if math.isnan(value):
        return "NaN"
    return str(int(value)) if value == int(value) else repr(float(value))


def _node_series(number: int, spec: FleetNodeSpec, end_s: float, step_s: float, walks: Walks, catalog: Catalog):
    """(family, type, labels, value, unix seconds) of one node over the run."""
    stop = end_s if spec.until_s is None else min(end_s, spec.until_s)
    offsets = [k * step_s for k in range(int(stop // step_s) + 1)]
    exporter_pod = f"nvidia-dcgm-exporter-{number:02d}x7k"
    judge = _judge(spec.scenario, catalog) if spec.exporter else None
    evaluation = Evaluation()
    for moment, sample, reports in _walked(spec.scenario, offsets, judge is not None, walks, catalog):
        at = moment.timestamp
        if judge is not None and sample is not None:
            sample = _on_node(sample, spec, number)
            judge.add(sample)
            plans, findings = list(judge.plans), list(judge.findings)
            workloads = kept(sample, plans, findings, evaluation.workloads)
            evaluation = Evaluation(sample, plans, findings, hostname=spec.name, workloads=workloads)
            yield from _exporter_series(spec, evaluation, at)
        kinds = {url: state.engine for url, state in reports.items()}
        if spec.dcgm:
            yield from _dcgm_series(spec, moment, number, exporter_pod, at, kinds)
        if spec.vllm:
            for endpoint in moment.endpoints:
                workload = _engine_pod(spec, endpoint, moment, kinds)
                yield from _engine_series(spec, number, endpoint, reports[endpoint.url], workload, at)


TOP_PROCESSES = 5
"""`gpumem-tui export`'s default `--top-processes`."""


def _on_node(sample: Sample, spec: FleetNodeSpec, number: int) -> Sample:
    """The scenario's sample as this node's: its name, and GPU UUIDs of its own (each scenario starts its
    UUIDs alike), the same in dcgm-exporter's series and the exporter's."""
    gpus = [gpu.model_copy(update={"uuid": _own_uuid(gpu.uuid, gpu.index, number)}) for gpu in sample.gpus]
    return sample.model_copy(update={"hostname": spec.name, "gpus": gpus})


def _own_uuid(uuid: str | None, index: int, number: int) -> str:
    """A GPU's UUID on the fleet's node `number`: each scenario starts its UUIDs alike."""
    return (uuid or f"GPU-{index}").replace("GPU-00000000", f"GPU-{number:08x}", 1)


def _exporter_series(spec: FleetNodeSpec, evaluation: Evaluation, at: float):
    """What Prometheus stores of one scrape of the node's `gpumem-tui export` (honor_labels: its own labels
    kept, the target's `job` and `instance` added, empty labels dropped)."""
    target = {"job": "gpumem-tui", "instance": f"{spec.name}:9877"}
    yield "up", "gauge", target, 1, at
    for family in node_families(evaluation, TOP_PROCESSES):
        for sample in family.samples:
            labels = {k: v for k, v in sample.labels.items() if v}
            yield sample.name, "gauge", {**labels, **target}, sample.value, at


def _dcgm_series(
    spec: FleetNodeSpec, moment: Moment, number: int, exporter_pod: str, at: float, kinds: Mapping[str, str]
):
    """dcgm-exporter's FB fields of each GPU, in MiB, labelled as the node's setup labels them (`kinds`: each
    engine endpoint's kind, which names its pod)."""
    holders = _holders(moment, spec, kinds)
    node = {spec.node_label: spec.name}
    for gpu in moment.gpus:
        uuid = _own_uuid(gpu.uuid, gpu.gpu_index, number)
        labels = {"gpu": str(gpu.gpu_index), "UUID": uuid, "device": f"nvidia{gpu.gpu_index}"}
        labels |= {"modelName": gpu.name or "?", **node, "job": "dcgm-exporter"}
        fields: dict[str, int | None] = {"USED": gpu.used, "FREE": gpu.free}
        if spec.reserved:
            fields["RESERVED"] = gpu.reserved
        workload = holders.get(gpu.gpu_index)
        copies = [(workload, fields)]
        if spec.virtual_gpus and workload is not None:
            pod_used = sum(p.memory or 0 for p in moment.processes if p.gpu_index == gpu.gpu_index)
            copies = [(None, fields), (workload, {**fields, "USED": pod_used})]
        for holder, values in copies:
            named = labels | _gpu_pod_labels(spec, holder, exporter_pod, number)
            for field_name, value in values.items():
                if value is not None:
                    yield f"DCGM_FI_DEV_FB_{field_name}", "gauge", named, round(value / MIB), at
    yield "up", "gauge", _exporter_target(spec, exporter_pod, number), 1, at


def _judge(scenario: str, catalog: Catalog) -> Investigation:
    """Findings as `gpumem-tui export --demo SCENARIO` judges them: against the plan the scenario was made with."""
    return Investigation(catalog, scenario_plan(load_scenario(scenario), catalog), Thresholds())


def _holders(moment: Moment, spec: FleetNodeSpec, kinds: Mapping[str, str]) -> dict[int, tuple[str, str]]:
    """GPU index -> (namespace, pod) of the engine or process holding it (Kubernetes setups only)."""
    if spec.setup == "bare":
        return {}
    held: dict[int, tuple[str, str]] = {}
    for endpoint in moment.endpoints:
        workload = _engine_pod(spec, endpoint, moment, kinds)
        for process in moment.processes:
            if process.pid in endpoint.pids:
                held.setdefault(process.gpu_index, workload)
    for process in moment.processes:
        if process.pod and "/" in process.pod:
            namespace, _, pod = process.pod.partition("/")
            held.setdefault(process.gpu_index, (namespace, pod))
    return held


def _engine_pod(spec: FleetNodeSpec, endpoint: Endpoint, moment: Moment, kinds: Mapping[str, str]) -> tuple[str, str]:
    """The engine's pod: the one its processes run in, else a name made from the node and endpoint."""
    for process in moment.processes:
        if process.pid in endpoint.pids and process.pod and "/" in process.pod:
            namespace, _, pod = process.pod.partition("/")
            return namespace, pod
    port = endpoint.url.rsplit(":", 1)[-1].strip("/")
    return "serving", f"{kinds.get(endpoint.url) or 'vllm'}-{spec.name}-{port}"


def _sglang_series(state: EngineState, target: Mapping[str, str], at: float):
    """An SGLang engine's gauges as its /metrics carries them (engine_exposition's points: one series per TP
    rank, labelled as SGLang 0.5.6 labels them), with the target's labels."""
    for family, values, value in POINTS["sglang"]([state]):
        if value is not None:
            yield family.name, "gauge", {**dict(zip(family.labels, values, strict=True)), **target}, value, at


def _gpu_pod_labels(
    spec: FleetNodeSpec, workload: tuple[str, str] | None, exporter_pod: str, number: int
) -> dict[str, str]:
    if spec.setup == "bare":
        return {"instance": f"{spec.name}:9400"}
    exporter = {"namespace": "gpu-operator", "pod": exporter_pod, "instance": f"10.1.{number}.2:9400"}
    if spec.setup == "exported_pod":
        if workload is None:
            return exporter
        return {"exported_namespace": workload[0], "exported_pod": workload[1], **exporter}
    if workload is None:
        return exporter  # honorLabels: an unallocated GPU carries the exporter's own pod
    return {"namespace": workload[0], "pod": workload[1], "instance": exporter["instance"]}


def _exporter_target(spec: FleetNodeSpec, exporter_pod: str, number: int) -> dict[str, str]:
    if spec.setup == "bare":
        return {"job": "dcgm-exporter", "instance": f"{spec.name}:9400"}
    return {
        "job": "dcgm-exporter",
        "instance": f"10.1.{number}.2:9400",
        "namespace": "gpu-operator",
        "pod": exporter_pod,
    }


def _engine_series(
    spec: FleetNodeSpec, number: int, endpoint: Endpoint, state: EngineState, workload: tuple[str, str], at: float
):
    """What Prometheus stores of one scrape of a vLLM engine: `up`, and while it serves, the values its
    /metrics carries (demo/engine_exposition.py writes them from the same state)."""
    port = endpoint.url.rsplit(":", 1)[-1].strip("/")
    job = "sglang" if state.engine == "sglang" else "vllm"
    if spec.setup == "bare":
        target = {"job": job, "instance": f"{spec.name}:{port}"}
    else:
        host = endpoint.url.split("//", 1)[-1].split(":", 1)[0].rsplit(".", 1)[-1]
        address = f"10.2.{number}.{host}:{port}"
        target = {"job": job, "instance": address, "namespace": workload[0], "pod": workload[1]}
    up = 1 if endpoint.state == "ok" else 0
    yield "up", "gauge", target, up, at
    if not up:
        return
    if state.engine == "sglang":
        yield from _sglang_series(state, target, at)
        return
    labels = {"model_name": state.model, "engine": ENGINE_INDEX, **target}
    for name, value in (
        ("vllm:kv_cache_usage_perc", state.kv_usage_fraction),
        ("vllm:num_requests_running", state.requests_running),
        ("vllm:num_requests_waiting", state.requests_waiting),
    ):
        if value is not None:
            yield name, "gauge", labels, value, at
    yield "vllm:num_preemptions", "counter", labels, state.preemptions_total or 0, at
    config = {
        "block_size": str(state.block_size),
        "cache_dtype": state.cache_dtype,
        "gpu_memory_utilization": str(state.gpu_memory_utilization),
        "num_gpu_blocks": str(state.num_gpu_blocks),
        "num_cpu_blocks": "0",
        "enable_prefix_caching": "True",
        **spec.settings,
    }
    yield "vllm:cache_config_info", "gauge", {**labels, **config}, 1, at
