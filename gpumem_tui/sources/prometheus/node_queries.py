"""The PromQL of one node's drill-down: the fleet's queries (queries.py), narrowed to one node.

A node's name may be in any of the node labels (`Hostname`, `hostname`, `node`, `kubernetes_node`) or in the
host part of `instance` (bare metal), so every series selector is asked once per label and the answers
joined with `or`; `labels.node_of` then keeps the series whose first naming label is this node. vLLM's
series name no node: they are asked for by the pods dcgm-exporter attributes the node's GPUs to (a first
round of queries says which), and by the node's host in `instance` (bare metal). Each query reads the
node's few series only (reference/fleet.md 4.2: a drill-down takes milliseconds at 1,000 nodes).

With `--node-label` (`LabelChoice`), dcgm-exporter's series are asked for by that label only, as the fleet reads
them. The node's own `gpumem-tui export` names it by its own labels (`Hostname`), which may be another name
(`10.1.6.2` under `instance` is `node-h` to it): the names it gives the GPUs dcgm-exporter reports are found
(`exporter_gpus`) and its series asked for by those names too, as the fleet joins them (gpumem_export.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from gpumem_tui.sources.prometheus.labels import AUTO, LabelChoice
from gpumem_tui.sources.prometheus.queries import ENGINE_KEY, GPU_ID, GPU_KEY, LOOK_BACK, NODE_LABELS, POD_LABELS

FB = "DCGM_FI_DEV_FB_(USED|FREE|RESERVED)"
ENGINE_SERIES = "vllm:(kv_cache_usage_perc|gpu_cache_usage_perc|num_requests_running|num_requests_waiting)"
PROCESSES = "gpumem_process_memory_used_bytes"
"""`gpumem-tui export`'s memory per process that is not an engine (docs/export.md)."""
NAMES = "exporter_gpus"
"""The query of the names the node's own `gpumem-tui export` gives it (`NodeQueries.exporter_gpus`), asked
only under --node-label."""
EXPORTED = ("node_findings", "processes")
"""The queries of the node's own `gpumem-tui export`'s series, asked by every name it gives the node."""


def quoted(value: str) -> str:
    """A label value as a PromQL string: `"node-a"`, quotes and backslashes escaped."""
    return json.dumps(value, ensure_ascii=False)


def _regex_literal(value: str) -> str:
    """`value` matched as itself inside an RE2 regular expression."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", value)


def _by(*labels: str) -> str:
    return ", ".join(labels)


def _naming(node: str, label: str) -> list[str]:
    """The matchers of the series a label names `node` on: the one label given (`instance`: its host part), or
    with `auto` each label that may name a node."""
    value = quoted(node)
    host = f"instance=~{quoted(f'{_regex_literal(node)}(:[0-9]+)?')}"
    if label == "instance":
        return [host]
    if label != "auto":
        return [f"{label}={value}"]
    return [*(f"{name}={value}" for name in NODE_LABELS[:-1]), host]


@dataclass(frozen=True)
class NodeQueries:
    """The queries about one node, with the --selector's matchers added to each selector."""

    node: str
    matchers: str = ""
    labels: LabelChoice = AUTO
    """--node-label and --pod-label: the label that names the node on dcgm-exporter's series (auto: any)."""
    exporter_names: tuple[str, ...] = ()
    """Other names the node's own `gpumem-tui export` gives it (`exporter_gpus` finds them)."""

    def _one(self, name: str, *matchers: str) -> str:
        """`{__name__=~"name", matcher, selector's matchers}`."""
        parts = [f"__name__=~{quoted(name)}", *matchers, *([self.matchers] if self.matchers else [])]
        return "{" + ", ".join(parts) + "}"

    def _on_node(self) -> list[str]:
        return _naming(self.node, self.labels.node)

    def on_node(self, name: str, ranged: str = "") -> list[str]:
        """One selector per label that may name the node (`ranged`: `[1h]` for a range function)."""
        return [self._one(name, matcher) + ranged for matcher in self._on_node()]

    def _exported(self, name: str, function: str) -> str:
        """The node's series of its own `gpumem-tui export`, by any label that names it, under each name."""
        names = (self.node, *self.exporter_names)
        each = [self._one(name, matcher) for node in names for matcher in _naming(node, "auto")]
        return " or ".join(f"{function}({s})" if function else s for s in each)

    def node_series(self, name: str, function: str = "") -> str:
        """The node's series of `name`, each selector inside `function` when one is given: `timestamp(a or b)`
        would be the evaluation time, `timestamp(a) or timestamp(b)` is each sample's own."""
        return " or ".join(f"{function}({s})" if function else s for s in self.on_node(name))

    @property
    def gpu_memory(self) -> str:
        """As Queries.gpu_memory: one copy per GPU (virtual-GPU copies deduplicated with max)."""
        return f"max by ({_by(*NODE_LABELS, *GPU_KEY, '__name__')}) ({self.node_series(FB)})"

    @property
    def gpu_pods(self) -> str:
        return f"count by ({_by(*NODE_LABELS, *GPU_ID, *POD_LABELS)}) ({self.node_series('DCGM_FI_DEV_FB_USED')})"

    @property
    def nodes_age(self) -> str:
        return f"time() - max by ({_by(*NODE_LABELS)}) ({self.node_series('DCGM_FI_DEV_FB_USED', 'timestamp')})"

    @property
    def nodes_seen(self) -> str:
        each = " or ".join(f"last_over_time({s})" for s in self.on_node("DCGM_FI_DEV_FB_USED", f"[{LOOK_BACK}]"))
        return f"count by ({_by(*NODE_LABELS)}) ({each})"

    @property
    def node_findings(self) -> str:
        return (
            f"max by ({_by(*NODE_LABELS, 'code', 'severity', 'gpu', 'pid', 'endpoint', 'model_name')}) "
            f"({self._exported('gpumem_finding_active', 'timestamp')})"
        )

    @property
    def processes(self) -> str:
        return self._exported(PROCESSES, "")

    def exporter_gpus(self, uuids: list[str]) -> str:
        """The names a `gpumem-tui export` that reports these GPUs gives its node: one series per name and GPU."""
        match = quoted("|".join(_regex_literal(u) for u in uuids))
        return f"max by ({_by(*NODE_LABELS, 'UUID')}) ({self._one('gpumem_gpu_memory_total_bytes', f'UUID=~{match}')})"

    def exported(self) -> dict[str, str]:
        """The queries of the node's own `gpumem-tui export`'s series."""
        return {name: getattr(self, name) for name in EXPORTED}

    def first_round(self) -> dict[str, str]:
        """What is asked before the node's pods are known: its GPUs, their pods, its age, its exporter's."""
        names = ("gpu_memory", "gpu_pods", "nodes_age", "nodes_seen", "node_findings", "processes")
        return {name: getattr(self, name) for name in names}

    def engine_queries(self, pods: list[tuple[str, str]]) -> dict[str, str]:
        """vLLM's series of the engines in these (namespace, pod)s, or on the node's host (bare metal)."""
        where = [
            f"{pod_label}={quoted(pod)}, {namespace_label}={quoted(namespace)}"
            for namespace, pod in pods
            for namespace_label, pod_label in (("namespace", "pod"), ("kubernetes_namespace", "kubernetes_pod_name"))
        ]
        where += [f"kubernetes_node={quoted(self.node)}", _naming(self.node, "instance")[0]]

        def each(name: str, ranged: str = "") -> list[str]:
            return [self._one(name, matcher) + ranged for matcher in where]

        served = " or ".join(f"last_over_time({s})" for s in each("vllm:cache_config_info", f"[{LOOK_BACK}]"))
        vllm_jobs = f"group by (job) ({served})"  # the jobs that served this node's vLLM series
        return {
            "engines": f"max by ({_by(*ENGINE_KEY, '__name__')}) ({' or '.join(each(ENGINE_SERIES))})",
            "pools": " or ".join(each("vllm:cache_config_info")),
            "preemptions": f"60 * sum by ({_by(*ENGINE_KEY)}) "
            f"({' or '.join(f'rate({s})' for s in each('vllm:num_preemptions_total', '[2m]'))})",
            "targets_down": f"(({' or '.join(each('up'))}) == 0) and on (job) {vllm_jobs}",
        }
