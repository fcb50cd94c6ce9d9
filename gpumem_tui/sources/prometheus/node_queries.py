"""The PromQL of one node's drill-down: the fleet's queries (query_table.py) narrowed to one node, each
under its table name. Every series selector is asked once per label that may name the node, joined with
`or`; the engines' series are asked for by the pods dcgm-exporter puts on the node's GPUs (a first round says
which) and by the node's host (bare metal). Why, and how the node's own `gpumem-tui export` is found under
another name: docs/design/queries.md."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from gpumem_tui.sources.prometheus import engine_series
from gpumem_tui.sources.prometheus.engine_series import pattern
from gpumem_tui.sources.prometheus.labels import AUTO, LabelChoice
from gpumem_tui.sources.prometheus.queries import (
    ENGINE_KEY,
    FINDING_KEY,
    FINDING_WORDS,
    GPU_ID,
    GPU_KEY,
    LOOK_BACK,
    NODE_LABELS,
    POD_LABELS,
    RATE_PENDING,
    WORDED,
    Queries,
    as_matcher,
)
from gpumem_tui.sources.prometheus.query_table import TABLE, names

FB = "DCGM_FI_DEV_FB_(USED|FREE|RESERVED)"
SERIES = engine_series.NAMES
ENGINE_SERIES = pattern((*SERIES.kv_usage, *SERIES.running, *SERIES.waiting))
"""An engine's gauges: the node asks no `waiting` apart (a node's few engines are no cost)."""
PROCESSES = "gpumem_process_memory_used_bytes"
"""`gpumem-tui export`'s memory per process that is not an engine (docs/export.md)."""
NAMES = "exporter_gpus"
"""The query of the names the node's own `gpumem-tui export` gives it (`NodeQueries.exporter_gpus`), asked
only under --node-label."""
FIRST = names(lambda q: q.node == "first")
"""Asked before the node's pods are known: its GPUs, their pods, its age, its exporter's series."""
ENGINE_ROUND = names(lambda q: q.node == "engines")
"""Asked by the node's pods and host: its engines' series."""
EXPORTED = names(lambda q: q.node == "first" and q.source == "gpumem-tui export")
"""The queries of the node's own `gpumem-tui export`'s series, asked by every name it gives the node."""
EXPORTER_ONLY = tuple(
    n for n in names(lambda q: q.source == "gpumem-tui export") if n not in (*EXPORTED, "exporter_gpus")
)
"""What the fleet reads of a node from its `gpumem-tui export` alone (gpumem_export.py: its memory, engines,
plans, age), asked where no dcgm-exporter series names the node, so a node that runs only the exporter opens."""
ELSEWHERE = "dcgm_elsewhere"
"""dcgm-exporter's series of the GPUs the node's exporter reports: where some answer, dcgm-exporter names the
node otherwise (--node-label), and the fleet lists it under that name, not this one."""


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

    def _exported(self, name: str, function: str, *extra: str) -> str:
        """The node's series of its own `gpumem-tui export`, by any label that names it, under each name."""
        names = (self.node, *self.exporter_names)
        each = [self._one(name, matcher, *extra) for node in names for matcher in _naming(node, "auto")]
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
        words = self._exported("gpumem_finding_info", "timestamp", as_matcher(WORDED))
        return (
            f"max by ({_by(*FINDING_KEY, *FINDING_WORDS)}) ({words}) "
            f"or max by ({_by(*FINDING_KEY)}) ({self._exported('gpumem_finding_active', 'timestamp')})"
        )

    @property
    def gpu_processes(self) -> str:
        """The node's processes that are not an engine, as its `gpumem-tui export` publishes them."""
        return self._exported(PROCESSES, "")

    def exporter_gpus(self, uuids: list[str]) -> str:
        """The names a `gpumem-tui export` that reports these GPUs gives its node: one series per name and GPU."""
        match = quoted("|".join(_regex_literal(u) for u in uuids))
        return f"max by ({_by(*NODE_LABELS, 'UUID')}) ({self._one('gpumem_gpu_memory_total_bytes', f'UUID=~{match}')})"

    def exported(self) -> dict[str, str]:
        """The queries of the node's own `gpumem-tui export`'s series."""
        return {name: getattr(self, name) for name in EXPORTED}

    def exporter_only(self) -> dict[str, str]:
        """The fleet's queries of `EXPORTER_ONLY`, narrowed to the node by each label that may name it, as the
        fleet names a node only its exporter reports; under --node-label, also ELSEWHERE."""
        narrowed = [
            Queries(", ".join(m for m in (self.matchers, matcher) if m), labels=self.labels)
            for matcher in _naming(self.node, "auto")
        ]
        asks = {name: " or ".join(f"({TABLE[name].promql(q)})" for q in narrowed) for name in EXPORTER_ONLY}
        if self.labels.node != "auto":  # its exporter's GPUs may be a node dcgm-exporter names otherwise
            mine = " or ".join(q.sel("gpumem_gpu_memory_total_bytes") for q in narrowed)
            asks[ELSEWHERE] = f"count by (UUID) ({self._one('DCGM_FI_DEV_FB_USED')} and on (UUID) ({mine}))"
        return asks

    def first_round(self) -> dict[str, str]:
        """What is asked before the node's pods are known: its GPUs, their pods, its age, its exporter's."""
        return {name: getattr(self, name) for name in FIRST}

    def engine_queries(self, pods: list[tuple[str, str]]) -> dict[str, str]:
        """The series of the engines in these (namespace, pod)s, or on the node's host (bare metal)."""
        where = [
            f"{pod_label}={quoted(pod)}, {namespace_label}={quoted(namespace)}"
            for namespace, pod in pods
            for namespace_label, pod_label in (("namespace", "pod"), ("kubernetes_namespace", "kubernetes_pod_name"))
        ]
        where += [f"kubernetes_node={quoted(self.node)}", _naming(self.node, "instance")[0]]
        return {name: getattr(self, name)(where) for name in ENGINE_ROUND}

    def _each(self, where: list[str], name: str, ranged: str = "") -> list[str]:
        """One selector of `name` per place an engine of the node may be."""
        return [self._one(name, matcher) + ranged for matcher in where]

    def engines(self, where: list[str]) -> str:
        return f"max by ({_by(*ENGINE_KEY, '__name__')}) ({' or '.join(self._each(where, ENGINE_SERIES))})"

    def pools(self, where: list[str]) -> str:
        return " or ".join(self._each(where, pattern(SERIES.pools)))

    def preemptions(self, where: list[str]) -> str:
        """As the fleet's: only where not 0 (an engine `engine_counters` names and this does not had none)."""
        return f"60 * sum by ({_by(*ENGINE_KEY)}) ({self._rates(where, '2m')}) != 0"

    def engine_counters(self, where: list[str]) -> str:
        """As the fleet's (Queries.engine_counters), over the node's engines."""
        keys = _by(*ENGINE_KEY)
        waiting = f"count by ({keys}) ({' or '.join(self._each(where, pattern(SERIES.waiting)))})"
        rate = f"count by ({keys}) ({self._rates(where, '2m')})"
        recent = " or ".join(f"count_over_time({s})" for s in self._each(where, pattern(SERIES.preemptions), "[1m]"))
        return (
            f'label_replace({waiting}, "gauge", "requests_waiting", "", "") '
            f'or label_replace({rate}, "gauge", "preemptions_per_min", "", "") '
            f'or label_replace(count by ({keys}) ({recent}) unless {rate}, "gauge", {quoted(RATE_PENDING)}, "", "")'
        )

    def _rates(self, where: list[str], window: str) -> str:
        return " or ".join(f"rate({s})" for s in self._each(where, pattern(SERIES.preemptions), f"[{window}]"))

    def targets_down(self, where: list[str]) -> str:
        served = " or ".join(f"last_over_time({s})" for s in self._each(where, pattern(SERIES.pools), f"[{LOOK_BACK}]"))
        return f"(({' or '.join(self._each(where, 'up'))}) == 0) and on (job) group by (job) ({served})"
