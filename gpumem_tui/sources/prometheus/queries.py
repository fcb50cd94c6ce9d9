"""The PromQL the fleet runs, from reference/fleet.md 4.2 (measured on Prometheus 2.42 at 1,000 nodes).

Each query reduces on the server: dcgm-exporter's device values are deduplicated with `max by` the GPU's
identity (`UUID`, `GPU_I_ID`) before anything else, because in virtual-GPU mode every device series is
repeated once per sharing pod; vLLM's series are reduced per engine. Which label names the node and the pod
varies by exporter version and scrape setup, so every candidate label is kept in the `by (...)` clause and
`labels.py` picks one client-side, where each rule has a test. A `--selector` is added to every series
selector, so one cluster or tenant of a shared server is asked about alone."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpumem_tui.sources.prometheus.labels import AUTO, LabelChoice

NODE_LABELS = ("Hostname", "hostname", "node", "kubernetes_node", "instance")
"""Where a node's name may be, in the order they are trusted (reference/fleet.md 1.2, 2.4)."""
POD_LABELS = ("exported_namespace", "exported_pod", "namespace", "pod", "kubernetes_namespace", "kubernetes_pod_name")
GPU_KEY = ("UUID", "GPU_I_ID", "gpu", "modelName")
ENGINE_KEY = ("model_name", "engine", "job", *POD_LABELS, *NODE_LABELS)
LOOK_BACK = "1h"
"""How far back a node or engine that stopped reporting is still named (stale), rather than forgotten."""

_MATCHER = re.compile(r'\s*[A-Za-z_][A-Za-z0-9_]*\s*(=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"\s*')


class SelectorError(ValueError):
    """A --selector that is not `{label="value", ...}`."""


def parse_selector(text: str | None) -> str:
    """`{cluster="prod-eu"}` -> `cluster="prod-eu"`, the matchers to add to every selector ('' for none)."""
    if text is None or not text.strip():
        return ""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise SelectorError(f"--selector {text!r}: expected label matchers in braces, such as '{{cluster=\"prod\"}}'")
    inner = body[1:-1].strip().rstrip(",")
    parts, at = [], 0
    while at < len(inner):
        match = _MATCHER.match(inner, at)
        if match is None:
            raise SelectorError(f"--selector {text!r}: cannot read the matcher at {inner[at : at + 20]!r}")
        parts.append(match.group(0).strip())
        at = match.end()
        if at < len(inner):
            if inner[at] != ",":
                raise SelectorError(f"--selector {text!r}: matchers are separated by commas")
            at += 1
    return ", ".join(parts)


def _by(*labels: str) -> str:
    return ", ".join(labels)


GPU_ID = ("UUID", "GPU_I_ID")
FB = "DCGM_FI_DEV_FB_(USED|FREE|RESERVED)"
EXPORTED = "gpumem_gpu_memory_(used|free|reserved|total)_bytes"
"""`gpumem-tui export`'s GPU memory, in bytes (docs/export.md)."""
EXPORTED_ENGINE = ("endpoint", "model_name", "engine", *POD_LABELS, *NODE_LABELS)
"""An engine as `gpumem-tui export` labels it: its node, endpoint URL, vLLM's model_name and engine, its pod."""
ENGINE_BANDS = "weights|non_torch|activations|cuda_graphs|kv_cache"
"""The bands of `gpumem_plan_bytes` the engine itself holds (not the driver's, the reserve or what is spare)."""


@dataclass(frozen=True)
class Queries:
    """Every query of one fleet sample, with the selector's matchers added.

    `look`: read GPUs one by one only where free memory is under this fraction of the card (or a field is
    missing or not a number); None reads every GPU. Node figures and pod-to-GPU counts are always read summed
    per node, so the overview's answer grows with nodes, not GPUs (reference/fleet.md 4.2)."""

    matchers: str = ""
    look: float | None = None
    labels: LabelChoice = AUTO
    """The labels that name a node and a workload pod on dcgm-exporter's series (--node-label, --pod-label):
    every candidate stays in the queries; the answers are read with this choice."""

    def _sel(self, metric: str) -> str:
        return f"{metric}{{{self.matchers}}}" if self.matchers else metric

    def _names(self, pattern: str, mig: bool | None = None) -> str:
        """`{__name__=~"pattern", <selector>}`; mig False: whole cards only (no `GPU_I_ID`), True: MIG GPU
        instances only."""
        extra = f", {self.matchers}" if self.matchers else ""
        if mig is not None:
            extra += ', GPU_I_ID!=""' if mig else ', GPU_I_ID=""'
        return f'{{__name__=~"{pattern}"{extra}}}'

    def _field(self, name: str) -> str:
        return f"max by ({_by(*NODE_LABELS, *GPU_ID)}) ({self._sel(f'DCGM_FI_DEV_FB_{name}')})"

    def _unless_fine(self, query: str) -> str:
        """`query` less the GPUs whose free memory is at least `look` of used + free + reserved (used + free
        where the exporter has no reserved); a NaN or a missing field is never fine."""
        if self.look is None:
            return query
        used, free, reserved = self._field("USED"), self._field("FREE"), self._field("RESERVED")
        share = f"{self.look!r}"
        fine = (
            f"({free} >= {share} * ({used} + {free} + {reserved})) or "
            f"(({free} >= {share} * ({used} + {free})) unless on ({_by(*NODE_LABELS, *GPU_ID)}) {reserved})"
        )
        return f"({query}) unless on ({_by(*NODE_LABELS, *GPU_ID)}) ({fine})"

    @property
    def gpu_memory(self) -> str:
        """Used, free and reserved MiB per GPU, one copy per GPU (deduplicated); with `look`, only the GPUs
        that need one."""
        return self._unless_fine(f"max by ({_by(*NODE_LABELS, *GPU_KEY, '__name__')}) ({self._names(FB)})")

    @property
    def gpu_pods(self) -> str:
        """Which pods dcgm-exporter says hold each GPU (the kubelet's allocation); one series per pair; with
        `look`, for the GPUs of `gpu_memory` only."""
        return self._unless_fine(
            f"count by ({_by(*NODE_LABELS, *GPU_ID, *POD_LABELS)}) ({self._sel('DCGM_FI_DEV_FB_USED')})"
        )

    def _cards(self, *labels: str) -> str:
        """Each card's series once per field, by its UUID: virtual-GPU copies deduplicated, and a MIG card's GPU
        instances folded into it (the card's own figure is at least any instance's, so `max` keeps the card's;
        where only instances report, the largest instance's)."""
        return f"max by ({_by(*NODE_LABELS, 'UUID', *labels, '__name__')}) ({self._names(FB)})"

    @property
    def node_memory(self) -> str:
        """Used, free and reserved MiB per node: each card once (virtual-GPU copies deduplicated, MIG instances
        not added to their card), then summed. A NaN on one GPU makes its node's sum NaN (unknown, never a
        smaller number)."""
        return f"sum by ({_by(*NODE_LABELS, '__name__')}) ({self._cards()})"

    @property
    def node_gpus(self) -> str:
        """GPUs per node and card model, per field: a field counted on fewer GPUs than another is missing. A
        MIG card counts once, not once per GPU instance."""
        return f"count by ({_by(*NODE_LABELS, 'modelName', '__name__')}) ({self._cards('modelName')})"

    @property
    def gpu_instances(self) -> str:
        """Every MIG GPU instance, by any FB or profiling field it reports: some dcgm-exporter versions export no
        FB field per instance (#380, #512), and one is then listed without memory rather than forgotten."""
        pattern = "DCGM_FI_DEV_FB_(USED|FREE|RESERVED)|DCGM_FI_PROF_GR_ENGINE_ACTIVE"
        return f"count by ({_by(*NODE_LABELS, *GPU_KEY)}) ({self._names(pattern, mig=True)})"

    @property
    def node_pods(self) -> str:
        """GPUs per node and workload (the kubelet's allocation as dcgm-exporter labels it): one series per
        pod, not per GPU."""
        return (
            f"count by ({_by(*NODE_LABELS, *POD_LABELS)}) "
            f"(max by ({_by(*NODE_LABELS, *GPU_ID, *POD_LABELS)}) ({self._sel('DCGM_FI_DEV_FB_USED')}))"
        )

    @property
    def nodes_age(self) -> str:
        """The age in seconds of each reporting node's newest sample (within Prometheus's 5 min lookback)."""
        return f"time() - max by ({_by(*NODE_LABELS)}) (timestamp({self._sel('DCGM_FI_DEV_FB_USED')}))"

    @property
    def nodes_seen(self) -> str:
        """Every node that reported within LOOK_BACK: one that is missing from `nodes_age` stopped reporting."""
        return f"count by ({_by(*NODE_LABELS)}) (last_over_time({self._sel('DCGM_FI_DEV_FB_USED')}[{LOOK_BACK}]))"

    @property
    def engines(self) -> str:
        """vLLM's KV usage (the new name, else the old) and its queue, per engine."""
        pattern = "vllm:(kv_cache_usage_perc|gpu_cache_usage_perc|num_requests_running|num_requests_waiting)"
        return f"max by ({_by(*ENGINE_KEY, '__name__')}) ({self._names(pattern)})"

    @property
    def sleeping(self) -> str:
        """Engines put to sleep (vLLM's sleep mode frees their weights or KV cache on purpose): the state each
        is in, per engine; awake engines are not in the answer."""
        extra = f", {self.matchers}" if self.matchers else ""
        selector = f'vllm:engine_sleep_state{{sleep_state!="awake"{extra}}}'
        return f"max by ({_by(*ENGINE_KEY, 'sleep_state')}) ({selector} == 1)"

    @property
    def pools(self) -> str:
        """`vllm:cache_config_info` as is: every CacheConfig field is a label, one series per engine."""
        return self._sel("vllm:cache_config_info")

    @property
    def preemptions(self) -> str:
        """Preemptions per minute per engine over the last 2 minutes."""
        return f"60 * sum by ({_by(*ENGINE_KEY)}) (rate({self._sel('vllm:num_preemptions_total')}[2m]))"

    @property
    def node_findings(self) -> str:
        """The findings `gpumem-tui export` raises on nodes that run it (docs/export.md), judged there against
        each engine's plan: what Prometheus alone cannot say (weights, KV pool, who else holds a GPU). The value
        is each series' sample time: only a node's newest scrape counts, so a finding that cleared is not read
        again from a series the lookback still returns (backfilled or remote-written data has no staleness
        markers)."""
        return (
            f"max by ({_by(*NODE_LABELS, 'code', 'severity', 'gpu', 'pid', 'endpoint', 'model_name')}) "
            f"(timestamp({self._sel('gpumem_finding_active')}))"
        )

    def _exported_fine(self, query: str) -> str:
        """`query` less the GPUs whose free memory is at least `look` of the card, by the exporter's own
        figures (it publishes the total); a GPU without them is never fine."""
        if self.look is None:
            return query
        on = _by(*NODE_LABELS, "UUID")
        free = f"max by ({on}) ({self._sel('gpumem_gpu_memory_free_bytes')})"
        total = f"max by ({on}) ({self._sel('gpumem_gpu_memory_total_bytes')})"
        return f"({query}) unless on ({on}) ({free} >= {self.look!r} * {total})"

    @property
    def exported_node_memory(self) -> str:
        """`gpumem-tui export`'s used, free, reserved and total bytes per node, each GPU once."""
        each = f"max by ({_by(*NODE_LABELS, 'UUID', '__name__')}) ({self._names(EXPORTED)})"
        return f"sum by ({_by(*NODE_LABELS, '__name__')}) ({each})"

    @property
    def exported_node_gpus(self) -> str:
        """GPUs per node and card model in `gpumem-tui export`'s series, per field."""
        each = f"max by ({_by(*NODE_LABELS, 'UUID', 'modelName', '__name__')}) ({self._names(EXPORTED)})"
        return f"count by ({_by(*NODE_LABELS, 'modelName', '__name__')}) ({each})"

    @property
    def exported_gpu_memory(self) -> str:
        """`gpumem-tui export`'s memory per GPU; with `look`, only the GPUs that need one."""
        return self._exported_fine(
            f"max by ({_by(*NODE_LABELS, 'UUID', 'gpu', 'modelName', '__name__')}) ({self._names(EXPORTED)})"
        )

    @property
    def node_processes(self) -> str:
        """Bytes that processes that are not an engine hold per node (`gpumem-tui export`'s, every row of
        every GPU: the largest processes and the `other` rest)."""
        each = f"max by ({_by(*NODE_LABELS, 'UUID', 'pid')}) ({self._sel('gpumem_process_memory_used_bytes')})"
        return f"sum by ({_by(*NODE_LABELS)}) ({each})"

    @property
    def gpu_processes(self) -> str:
        """Each process that is not an engine on each GPU, as `gpumem-tui export` bounds them (its
        `--top-processes` per GPU and one `other` row); with `look`, on the GPUs that need one."""
        labels = _by(*NODE_LABELS, "UUID", "pid", "process_name", *POD_LABELS)
        return self._exported_fine(f"max by ({labels}) ({self._sel('gpumem_process_memory_used_bytes')})")

    @property
    def engine_plans(self) -> str:
        """Bytes each engine's plan expects it to hold, over all its GPUs (`gpumem-tui export`'s bands)."""
        bands = (
            f'{{__name__="gpumem_plan_bytes", band=~"{ENGINE_BANDS}"{", " + self.matchers if self.matchers else ""}}}'
        )
        each = f"max by ({_by(*EXPORTED_ENGINE, 'UUID', 'band')}) ({bands})"
        return f"sum by ({_by(*EXPORTED_ENGINE)}) ({each})"

    @property
    def engine_plan_gpus(self) -> str:
        """The GPUs each engine's plan is drawn over (`gpumem-tui export`'s): one series per engine and GPU, a
        fact that changes when an engine starts or moves, as dcgm-exporter's pod-to-GPU series."""
        weights = f'{{__name__="gpumem_plan_bytes", band="weights"{", " + self.matchers if self.matchers else ""}}}'
        return f"max by ({_by(*EXPORTED_ENGINE, 'UUID')}) ({weights})"

    @property
    def exported_engines(self) -> str:
        """Each engine's KV usage and pool as `gpumem-tui export` reads them from the engine."""
        pattern = "gpumem_engine_kv_cache_(usage_ratio|pool_tokens)"
        return f"max by ({_by(*EXPORTED_ENGINE, '__name__')}) ({self._names(pattern)})"

    @property
    def exporters_age(self) -> str:
        """Nodes that run `gpumem-tui export`, and the age in seconds of the newest sample each published."""
        return f"time() - max by ({_by(*NODE_LABELS)}) (timestamp({self._sel('gpumem_sample_timestamp_seconds')}))"

    @property
    def targets_down(self) -> str:
        """Scrape targets that failed (`up == 0`) in a job that served vLLM series within LOOK_BACK."""
        return (
            f"({self._sel('up')} == 0) and on (job) "
            f"group by (job) (last_over_time({self._sel('vllm:cache_config_info')}[{LOOK_BACK}]))"
        )
