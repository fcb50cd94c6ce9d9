"""Which label names a series' node and workload pod, across dcgm-exporter versions and scrape setups
(`Hostname`, `hostname`, `node`, `instance`'s host; `exported_pod`, `pod`, `kubernetes_pod_name`), or the one
`--node-label` and `--pod-label` name (`LabelChoice`). docs/design/fleet.md lists them in order."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line reads the choices below to write its help: the client is not loaded
    from gpumem_tui.sources.prometheus.client import Series

EXPORTER_POD = re.compile(r"dcgm-exporter|nvidia-dcgm")
NODE_CHOICES = ("auto", "Hostname", "hostname", "node", "kubernetes_node", "instance")
"""`--node-label`: `auto` (the first of the others a series has, `instance`'s host last) or one of them."""
POD_CHOICES = ("auto", "exported_pod", "pod")
"""`--pod-label`: `auto` (`exported_*` when present, else `pod`, else `kubernetes_pod_name`) or one of them."""
_POD_PAIRS = {
    "exported_pod": ("exported_namespace", "exported_pod"),
    "pod": ("namespace", "pod"),
    "kubernetes": ("kubernetes_namespace", "kubernetes_pod_name"),
}


@dataclass(frozen=True)
class LabelChoice:
    """Which label names a node and which a workload pod on dcgm-exporter's series (`auto`: in order)."""

    node: str = "auto"
    pod: str = "auto"

    def __post_init__(self) -> None:
        if self.node not in NODE_CHOICES or self.pod not in POD_CHOICES:
            raise ValueError(f"node label {self.node!r} or pod label {self.pod!r} is not one of the choices")


AUTO = LabelChoice()


def projected(labels: Mapping[str, str], choice: LabelChoice) -> dict[str, str]:
    """A dcgm-exporter series' labels with only the chosen node and pod labels among the candidates."""
    drop: set[str] = set()
    if choice.node != "auto":
        drop |= {name for name in NODE_CHOICES[1:] if name != choice.node}
    if choice.pod != "auto":
        drop |= {name for kind, pair in _POD_PAIRS.items() if kind != choice.pod for name in pair}
    return {k: v for k, v in labels.items() if k not in drop}


NAMED_BY = ("Hostname", "hostname", "node", "kubernetes_node")


def node_of(labels: Mapping[str, str]) -> str | None:
    """The node a series is about, by the first label that names it; None when none does."""
    for name in NAMED_BY:
        if labels.get(name):
            return labels[name]
    return host_of(labels.get("instance", ""))


def per_node(series: Iterable[Series], keep: Callable[[float, float], float]) -> dict[str, float]:
    """Node -> the value `keep` (min, max) picks of its series' finite values; a series naming no node is
    passed over."""
    found: dict[str, float] = {}
    for s in series:
        node = node_of(s.labels)
        if node is not None and math.isfinite(s.value):
            found[node] = keep(s.value, found[node]) if node in found else s.value
    return found


def node_label_of(labels: Mapping[str, str]) -> str:
    """The label `node_of` reads the node from (`instance`: its host part)."""
    return next((name for name in NAMED_BY if labels.get(name)), "instance")


def host_of(instance: str) -> str | None:
    """`node-c:8000` -> `node-c`; `[::1]:9400` -> `::1`; '' -> None."""
    if not instance:
        return None
    if instance.startswith("["):
        return instance[1 : instance.find("]")] if "]" in instance else instance
    host, colon, port = instance.rpartition(":")
    return host if colon and port.isdigit() else instance


def exporter_pods(series: Iterable[Mapping[str, str]]) -> set[str]:
    """The exporter's own pods: the `pod` of every series that also names the workload as `exported_pod`."""
    return {labels["pod"] for labels in series if labels.get("exported_pod") and labels.get("pod")}


def workload_of(labels: Mapping[str, str], exporters: Iterable[str] = ()) -> tuple[str, str] | None:
    """The (namespace, pod) holding a GPU or serving an engine; None when the series names no workload, or
    only the exporter's own pod."""
    if labels.get("exported_pod"):
        return labels.get("exported_namespace", ""), labels["exported_pod"]
    pod = labels.get("pod")
    if pod:
        if EXPORTER_POD.search(pod) or pod in exporters:
            return None
        return labels.get("namespace", ""), pod
    if labels.get("kubernetes_pod_name"):
        return labels.get("kubernetes_namespace", ""), labels["kubernetes_pod_name"]
    return None
