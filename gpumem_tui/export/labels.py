"""Label sets and how a value becomes a label value; `Rows` and `InfoRows` fill one metric family.

GPU series carry dcgm-exporter's label names (`gpu`, `UUID`, `pci_bus_id`, `modelName`, `Hostname`), so a
query can join them with DCGM's own `on (Hostname, gpu)` (docs/export.md)."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily

from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.models import GpuRecord, Sample

GPU = ("Hostname", "gpu", "UUID", "pci_bus_id", "modelName")
"""dcgm-exporter's names for a GPU (its `Hostname` is lower case after 4.8.2: docs/export.md)."""
GPU_ID = ("Hostname", "gpu", "UUID")
"""A GPU named in series about something on it (a plan, a process, an engine's pool)."""
ENGINE = ("Hostname", "endpoint", "model_name", "engine", "namespace", "pod")
"""An engine as vLLM labels it (`model_name`, `engine`: its data-parallel index), at its endpoint, in its
pod: on its KV series, its plans and its findings alike, so each joins with vLLM's own series."""
FINDING = (*ENGINE, "code", "severity", "gpu", "pid", "process_namespace", "process_pod")
"""A finding's labels (`gpumem_finding_active`, `gpumem_finding_info`): the engine it is about (for a GPU's
finding, the engine on that GPU, less its endpoint: export/workloads.py), its code and severity, the GPU, and the
process it names with that process's own pod."""


def label_text(value: object) -> str:
    """A label value: outside text as it is written (prometheus_client escapes quotes, backslashes and
    newlines); empty for None, which Prometheus reads as no label. The exposition is UTF-8, so bytes a name
    could not decode (surrogates) are written `\\xff`, as `literal` writes them: one such name must not
    fail the whole scrape."""
    if value is None:
        return ""
    text = str(value)
    if text.isascii():  # the common label: nothing to re-encode (a surrogate is never ASCII)
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def gpu_labels(sample: Sample, gpu: GpuRecord) -> dict[str, object]:
    return {
        "Hostname": sample.hostname,
        "gpu": gpu.index,
        "UUID": gpu.uuid,
        "pci_bus_id": gpu.bus_id,
        "modelName": gpu.name,
    }


def engine_labels(
    sample: Sample, endpoint: EndpointStatus | None, record: EngineRecord | None, model: str | None = None
) -> dict[str, object]:
    """`ENGINE`'s values: the model the record serves (`model` when there is no record: the plan's), its
    engine index, and the pod the endpoint's processes run in."""
    pids = set(endpoint.pids) if endpoint else set()
    pod = next((p.pod for p in sample.processes if p.pid in pids and p.pod), None)
    return {
        "Hostname": sample.hostname,
        "endpoint": endpoint.url if endpoint else None,
        "model_name": record.model if record and record.model else model,
        "engine": record.engine_index if record else None,
        **split_pod(pod),
    }


def split_pod(pod: str | None) -> dict[str, str | None]:
    """`namespace/name` as the `namespace` and `pod` labels (a pod known by its uid only has no namespace)."""
    if pod is None:
        return {"namespace": None, "pod": None}
    namespace, _, name = pod.rpartition("/")
    return {"namespace": namespace or None, "pod": name}


class Rows:
    """One gauge family being filled: each label set once (the first wins: Prometheus refuses a scrape
    that repeats a series), and no row for a value that was not read (None)."""

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...]):
        self.family, self.labels = GaugeMetricFamily(name, documentation, labels=labels), labels
        self.seen: set[tuple[str, ...]] = set()

    def add(self, labels: Mapping[str, object], value: float | None) -> None:
        values = _fresh(self.seen, self.labels, labels)
        if value is not None and values is not None:
            self.family.add_metric(values, float(value))


class InfoRows:
    """One info family being filled (exposed as `name_info`, value 1, as Prometheus names metadata): its
    identity labels once each, and the facts as more labels."""

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...]):
        self.family, self.labels = InfoMetricFamily(name, documentation, labels=labels), labels
        self.seen: set[tuple[str, ...]] = set()

    def add(self, labels: Mapping[str, object], facts: Mapping[str, object]) -> None:
        values = _fresh(self.seen, self.labels, labels)
        if values is not None:
            self.family.add_metric(values, {name: label_text(fact) for name, fact in facts.items()})


def _fresh(seen: set[tuple[str, ...]], names: tuple[str, ...], labels: Mapping[str, object]) -> list[str] | None:
    """The label values in `names`' order, or None when that label set was added before."""
    values = tuple([label_text(labels.get(name)) for name in names])
    if values in seen:
        return None
    seen.add(values)
    return list(values)
