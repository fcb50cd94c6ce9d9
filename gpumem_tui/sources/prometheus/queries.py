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

from gpumem_tui.sources.prometheus.engine_series import NAMES, pattern
from gpumem_tui.sources.prometheus.labels import AUTO, LabelChoice

NODE_LABELS = ("Hostname", "hostname", "node", "kubernetes_node", "instance")
"""Where a node's name may be, in the order they are trusted (reference/fleet.md 1.2, 2.4)."""
POD_LABELS = ("exported_namespace", "exported_pod", "namespace", "pod", "kubernetes_namespace", "kubernetes_pod_name")
GPU_KEY = ("UUID", "GPU_I_ID", "GPU_I_PROFILE", "gpu", "modelName")
"""A GPU's labels; `GPU_I_PROFILE` (a MIG instance's, `3g.40gb`) is one value per instance: no more series."""
ENGINE_KEY = ("model_name", "engine", "job", *POD_LABELS, *NODE_LABELS)
LOOK_BACK = "1h"
"""How far back a node or engine that stopped reporting is still named (stale), rather than forgotten."""
LOOK_BACK_S = 3600.0
"""LOOK_BACK in seconds: a subquery's steps each look back 5 min more (the lookback), which this cuts off."""

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
"""What names one GPU or MIG GPU instance."""
CARD_ID = ("UUID",)
"""What names one card in a sum over cards: a MIG card's GPU instances share its UUID and are folded into it
(`max`, as `_cards` does), never added to the card's own figures."""
FB = "DCGM_FI_DEV_FB_(USED|FREE|RESERVED)"
FB_CHANGING = "DCGM_FI_DEV_FB_(USED|FREE)"
"""The fields a refresh reads: reserved memory does not change while a GPU is there."""
EXPORTED = "gpumem_gpu_memory_(used|free|reserved|total)_bytes"
"""`gpumem-tui export`'s GPU memory, in bytes (docs/export.md)."""
EXPORTED_ENGINE = ("endpoint", "model_name", "engine", *POD_LABELS, *NODE_LABELS)
"""An engine as `gpumem-tui export` labels it: its node, endpoint URL, vLLM's model_name and engine, its pod."""
FINDING_KEY = (*NODE_LABELS, "code", "severity", "gpu", "pid", "endpoint", "model_name")
"""What names a node's exported finding (`gpumem_finding_active`) to the fleet."""
FINDING_WORDS = ("title", "try_this")
"""The labels of `gpumem_finding_info` that say a finding in the node's words."""
WORDED = ("severity", "!=", "info")
"""The findings whose words the fleet reads: not the info ones, one per GPU on a healthy vLLM node (the headroom
it leaves on purpose), which would make the read per GPU; they are said by their code's meaning."""

ENGINE_BANDS = "weights|non_torch|activations|cuda_graphs|kv_cache"
"""The bands of `gpumem_plan_bytes` the engine itself holds (not the driver's, the reserve or what is spare)."""
NODE_MEMORY = "gpumem:node_fb_mib:sum"
"""Recorded (`gpumem-tui fleet rules`): used, free, reserved MiB per node, the field in label `field`."""
LEAST_FREE = "gpumem:node_fb_free_mib:min"
"""Recorded: the least free MiB of one GPU, per node and card."""
NODE_LOW = "gpumem:node_fb_low:count"
"""Recorded: GPUs per node and card whose free MiB is under the rules' fraction (the reader's `look`) of their
own total, each GPU once; a node with none has no series."""
NODE_AGE = "gpumem:node_fb_used_age_s:min"
"""Recorded: the age in seconds of each node's newest FB_USED sample, when the rule was evaluated."""
NODE_GPUS = "gpumem:node_gpus:count"
"""Recorded: GPUs per node and card that report each field (label `field`)."""
CARD_TOTALS = "gpumem:card_total_mib:count_values"
"""Recorded: each distinct total MiB of one GPU per card (label `total`), with how many GPUs have it."""
RECORDED = (NODE_MEMORY, LEAST_FREE, NODE_LOW, NODE_GPUS, NODE_AGE, CARD_TOTALS)
"""In the rule group's order: the last, a few series (a card's totals), is what a refresh asks to tell the group
was evaluated again (`rules_evaluated`)."""
NODE_CHANGED = "gpumem:node_changed:time"
"""Recorded after the figures, before the cards' totals: the nodes some of whose WATCHED_SERIES moved, came,
went or linger (no staleness marker ended them) since the group's evaluation before, each with this evaluation's
moment (a node's own series that lingers, as in backfilled blocks, tells an older one); and two series without
a node (label `changes`): `since`, the evaluation compared (only where it is one interval back), and `at`, this
one. Not in RECORDED: a server without it is read as before (kept_recorded.py, docs/design/queries.md)."""
WATCHED_SERIES = {NODE_MEMORY: 'field=~"USED|FREE"', LEAST_FREE: "", NODE_LOW: ""}
"""The recorded figures a refresh reads whose changes NODE_CHANGED records (name -> the refresh's matcher): not the
ages, which move at each evaluation where dcgm-exporter's scrapes are not in step with the rules."""


def _field(query: str) -> str:
    """`query` with its series' field (`USED`, `FREE`, `RESERVED`) in label `field`: a recorded series
    takes its rule's name, so the name cannot say it."""
    return f'label_replace({query}, "field", "$1", "__name__", "DCGM_FI_DEV_FB_(.+)")'


def as_matcher(where: tuple[str, str, str]) -> str:
    """(label, operator, value) as a PromQL matcher: `severity!="info"`."""
    label, op, value = where
    return f"{label}{op}{string(value)}"


_REGEX_SPECIAL = set("\\.+*?()|[]{}^$")


def literal_regex(text: str) -> str:
    """A regular expression (RE2, as Prometheus anchors it) that matches exactly `text`."""
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)


def string(text: str) -> str:
    """`text` as a PromQL double-quoted string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


RATE_PENDING = "preemptions_rate_pending"
"""`engine_counters`' label `gauge` for an engine whose preemption counter has no rate yet (a sample in the
last minute, one in the last 2): the reader asks the counters again at each refresh until it has one."""
PART = "gpumem_query"
"""The label `merged` tags each part's series with (and the reader takes off again)."""


def merged(parts: dict[str, str]) -> str:
    """Several queries as one request: each part's series tagged with its name in label PART, so `or` keeps
    them all (it matches label sets without the metric name: two parts about one engine would otherwise
    drop one) and `split` gives each part its own. For queries whose answers are small (mostly empty), where
    a request's own cost is most of theirs."""
    return " or ".join(
        f'label_replace({promql}, {string(PART)}, {string(name)}, "", "")' for name, promql in parts.items()
    )


@dataclass(frozen=True)
class Queries:
    """Every query of one fleet sample, with the selector's matchers added.

    `look`: None reads every GPU one by one (the full read, `fleet snapshot`). A fraction makes the overview
    (`fleet check`, the fleet screen, sources/prometheus/reader.py): per refresh only figures aggregated per
    node on the server, and GPUs one by one only on the nodes that need a look, narrowed to them by name; so
    its answer grows with nodes, not GPUs, and no per-GPU arithmetic runs on the server (reference/fleet.md
    4.2). `look` is the share of the card under which a GPU's free memory is counted as low."""

    matchers: str = ""
    look: float | None = None
    labels: LabelChoice = AUTO
    """The labels that name a node and a workload pod on dcgm-exporter's series (--node-label, --pod-label):
    every candidate stays in the queries; the answers are read with this choice."""
    rules: bool = False
    """Read the per-node figures from the `gpumem:*` series of `gpumem-tui fleet rules` (RULES) instead of
    aggregating the raw series: the reader sets it when the server has them."""
    over: float | None = None
    """The fleet screen's: between the reads of the engines' pools, a refresh reads an engine's KV usage and
    requests running one by one only where its KV usage is at or over this (the saturation fraction: where a
    finding may be), and the rest per model (`model_gauges`). None: every engine's, each refresh."""

    def sel(self, metric: str, extra: str = "") -> str:
        inner = ", ".join(m for m in (self.matchers, extra) if m)
        return f"{metric}{{{inner}}}" if inner else metric

    def _recorded(self, name: str, extra: str = "") -> str:
        """A recorded series of `gpumem-tui fleet rules` as the reader reads it: without its name (an aggregation
        by every other label keeps each series, less the bytes of a name the reader does not use: at 10,000
        nodes a fifth of the four recorded answers a refresh reads)."""
        return f"max without () ({self._recorded_sel(name, extra)})"

    def _recorded_sel(self, name: str, extra: str = "") -> str:
        """A recorded name's selector; the count under the fraction only as recorded at the reader's own `look`
        (its `fraction` label), so rules printed with another threshold read as absent, never as wrong counts."""
        mine = f"fraction={string(repr(self.look))}" if name == NODE_LOW and self.look is not None else ""
        return self.sel(name, ", ".join(m for m in (extra, mine) if m))

    def names(self, pattern: str, extra: str = "", mig: bool | None = None) -> str:
        """`{__name__=~"pattern", <selector>, extra}`; mig False: whole cards only (no `GPU_I_ID`), True: MIG
        GPU instances only."""
        more = "".join(f", {m}" for m in (self.matchers, extra) if m)
        if mig is not None:
            more += ', GPU_I_ID!=""' if mig else ', GPU_I_ID=""'
        return f'{{__name__=~"{pattern}"{more}}}'

    def metric(self, names: tuple[str, ...], extra: str = "") -> str:
        """The series of these names: `name{<selector>, extra}` for one, `{__name__=~"a|b", ...}` for several."""
        return self.sel(names[0], extra) if len(names) == 1 else self.names(pattern(names), extra)

    def _cards(self, *labels: str, fields: str = FB) -> str:
        """Each card's series once per field, by its UUID: virtual-GPU copies deduplicated, and a MIG card's GPU
        instances folded into it (the card's own figure is at least any instance's, so `max` keeps the card's;
        where only instances report, the largest instance's)."""
        return f"max by ({_by(*NODE_LABELS, 'UUID', *labels, '__name__')}) ({self.names(fields)})"

    @property
    def gpu_memory(self) -> str:
        """Used, free and reserved MiB per GPU, one copy per GPU (deduplicated): every GPU (the full read)."""
        return f"max by ({_by(*NODE_LABELS, *GPU_KEY, '__name__')}) ({self.names(FB)})"

    def gpu_detail(self, nodes: dict[str, list[str]]) -> str:
        """`gpu_memory` for the named nodes only: label -> node names (the label each node is named by;
        `instance` holds a node as `host:port`). Names are outside text: matched literally."""
        parts = []
        for label, names in sorted(nodes.items()):
            pattern = "|".join(literal_regex(n) for n in sorted(names))
            if label == "instance":
                pattern = f"({pattern})(:[0-9]+)?|\\[({pattern})\\](:[0-9]+)?"
            parts.append(
                f"max by ({_by(*NODE_LABELS, *GPU_KEY, '__name__')}) ({self.names(FB, f'{label}=~{string(pattern)}')})"
            )
        return " or ".join(parts)

    @property
    def gpu_pods(self) -> str:
        """Every GPU once per pod dcgm-exporter says holds it (the kubelet's allocation), with its index and
        card; a GPU no pod holds once without pod labels. One series per pair: read as a slow fact."""
        return f"count by ({_by(*NODE_LABELS, *GPU_KEY, *POD_LABELS)}) ({self.sel('DCGM_FI_DEV_FB_USED')})"

    @property
    def node_memory(self) -> str:
        """Used and free MiB per node: each card once (virtual-GPU copies deduplicated, MIG instances not added
        to their card), then summed. A NaN on one GPU makes its node's sum NaN (unknown, never a smaller
        number). Reserved is `node_reserved`'s, a slow fact."""
        if self.rules:
            return self._recorded(NODE_MEMORY, 'field=~"USED|FREE"')
        return f"sum by ({_by(*NODE_LABELS, '__name__')}) ({self._cards(fields=FB_CHANGING)})"

    @property
    def node_reserved(self) -> str:
        """Reserved MiB per node, as `node_memory` sums the others: what the driver holds of each GPU, the same
        while the GPU is there, so read with the slow facts (which are read again when a node's GPUs change)."""
        if self.rules:
            return self._recorded(NODE_MEMORY, 'field="RESERVED"')
        return f"sum by ({_by(*NODE_LABELS, '__name__')}) ({self._cards(fields='DCGM_FI_DEV_FB_RESERVED')})"

    @property
    def node_gpus(self) -> str:
        """GPUs per node and card model, per field: a field counted on fewer GPUs than another is missing. A
        MIG card counts once, not once per GPU instance."""
        if self.rules:
            return self._recorded(NODE_GPUS)
        return f"count by ({_by(*NODE_LABELS, 'modelName', '__name__')}) ({self._cards('modelName')})"

    @property
    def gpu_instances(self) -> str:
        """Every MIG GPU instance, by any FB or profiling field it reports, with which (`__name__`): some
        dcgm-exporter versions export no FB field per instance (#380, #512), and one is then listed without
        memory rather than forgotten; one that reports an FB field is not (the overview does not read it)."""
        pattern = "DCGM_FI_DEV_FB_(USED|FREE|RESERVED)|DCGM_FI_PROF_GR_ENGINE_ACTIVE"
        return f"count by ({_by(*NODE_LABELS, *GPU_KEY, '__name__')}) ({self.names(pattern, mig=True)})"

    @property
    def card_totals(self) -> str:
        """Each distinct used + free + reserved MiB of one GPU (used + free where it has no reserved), per card
        model, as a `total` label with how many GPUs have it: whether every GPU of a card has one total."""
        if self.rules:
            return self._recorded(CARD_TOTALS)
        return self._card_totals(NODE_LABELS)

    def _card_totals(self, kept: tuple[str, ...], by: tuple[str, ...] = ()) -> str:
        per_gpu = f"max by ({_by(*kept, 'UUID', 'modelName', '__name__')}) ({self.names(FB)})"
        total = f"sum by ({_by(*kept, 'UUID', 'modelName')}) ({per_gpu})"
        return f'count_values by ({_by(*by, "modelName")}) ("total", {total})'

    @property
    def node_least_free(self) -> str:
        """The free MiB of the GPU with the least free memory, per node and card."""
        if self.rules:
            return self._recorded(LEAST_FREE)
        free = f"max by ({_by(*NODE_LABELS, 'UUID', 'modelName')}) ({self.sel('DCGM_FI_DEV_FB_FREE')})"
        return f"min by ({_by(*NODE_LABELS, 'modelName')}) ({free})"

    def node_low(self, bounds: dict[str, float]) -> str:
        """GPUs whose free MiB is under the card's bound, per node and card: card model -> bound in MiB (the
        `look` share of the card's total, computed here). A comparison with a constant, per card. The rules
        count each GPU against its own total: the same count wherever the reader uses it, a node whose GPUs of
        a card each have the card's largest total (looks.py)."""
        if self.rules:
            return self._recorded(NODE_LOW)
        parts = [
            f"max by ({_by(*NODE_LABELS, 'UUID', 'modelName')}) "
            f"({self.sel('DCGM_FI_DEV_FB_FREE', f'modelName={string(card)}')}) < {bound!r}"
            for card, bound in sorted(bounds.items())
        ]
        return f"count by ({_by(*NODE_LABELS, 'modelName')}) ({' or '.join(parts)})"

    @property
    def rules_present(self) -> str:
        """Which of the `gpumem:*` series the reader uses the server has (one series per name, its name in label
        `recorded`; by name, not by a regex over every name the server holds), and how many nodes that report
        have no recorded figures (a series labelled `unrecorded`; none when all have): rules printed for a
        narrower --selector record only its nodes. `or` matches series without their names, hence labels of
        their own; each name is counted alone, as an `or` of the series themselves matches every series' labels
        (at 1,000 nodes 15,000 of them, 1.6 times the cost)."""
        nodes = _by(*NODE_LABELS)
        unrecorded = f"count by ({nodes}) ({self.sel('DCGM_FI_DEV_FB_USED')}) unless on ({nodes}) {self.sel(NODE_GPUS)}"
        return f'{self.rules_named} or label_replace(count({unrecorded}), "unrecorded", "nodes", "", "")'

    @property
    def rules_evaluated(self) -> str:
        """When the recording rules were last evaluated: the newest sample of the group's last rule (a group's
        rules are evaluated in order, each one's series written before the next, so that evaluation's figures
        are all in by then), the cards' totals: a few series, where a node's would be 10^4 to read at each
        refresh. A refresh keeps its recorded answers until this moves (kept_recorded.py)."""
        return f"max(timestamp({self._recorded_sel(RECORDED[-1])}))"

    @property
    def node_changes(self) -> str:
        """The nodes whose recorded figures moved at the rules' last evaluation, and which two evaluations that
        compares (NODE_CHANGED): a refresh after an evaluation reads those nodes' figures only (kept_recorded.py).
        A node's series of an older evaluation that no staleness marker ended (backfilled blocks) is left out here,
        on the server: at the rules' first evaluation every node is new."""
        now, marks = self.sel(NODE_CHANGED, 'changes="at"'), self.sel(NODE_CHANGED, 'changes=~".+"')
        return f"({self.sel(NODE_CHANGED)} >= scalar(max({now}))) or {marks}"

    @property
    def rules_named(self) -> str:
        """The first half of `rules_present`: which of the `gpumem:*` series the server has, without which nodes
        they record (the first read tells that from the data ages and the recorded GPU counts it reads anyway)."""
        return " or ".join(
            f'label_replace(count({self._recorded_sel(name)}), "recorded", {string(name)}, "", "")' for name in RECORDED
        )

    def recording_rules(self, keep: tuple[str, ...] = (), interval_s: int = 30) -> dict[str, str]:
        """record name -> expression of `gpumem-tui fleet rules`: the raw aggregations above, computed once per
        rule interval by the server, the field of each node sum in a `field` label (a recorded series has its
        rule's name). `keep`: labels also kept (the selector's), so a reader's selector still matches. The count
        of GPUs under the fraction is made with `look`, the reader's (a ValueError without one); the changes
        (NODE_CHANGED) with `interval_s`, the group's."""
        if self.look is None:
            raise ValueError("the recording rules count GPUs under a fraction: Queries.look is needed")
        kept = (*keep, *NODE_LABELS)
        field = _field(f"max by ({_by(*kept, 'UUID', '__name__')}) ({self.names(FB)})")
        free = f"max by ({_by(*kept, 'UUID', 'modelName')}) ({self.sel('DCGM_FI_DEV_FB_FREE')})"
        cards = f"max by ({_by(*kept, 'UUID', 'modelName', '__name__')}) ({self.names(FB)})"
        total = f"sum by ({_by(*kept, 'UUID', 'modelName')}) ({cards})"
        return {
            NODE_MEMORY: f"sum by ({_by(*kept, 'field')}) ({field})",
            LEAST_FREE: f"min by ({_by(*kept, 'modelName')}) ({free})",
            NODE_LOW: f"label_replace(count by ({_by(*kept, 'modelName')}) ({free} < {self.look!r} * {total}), "
            f'"fraction", {string(repr(self.look))}, "", "")',
            NODE_GPUS: f"count by ({_by(*kept, 'modelName', 'field')}) ({_field(cards)})",
            NODE_AGE: f"time() - max by ({_by(*kept)}) (timestamp({self.sel('DCGM_FI_DEV_FB_USED')}))",
            NODE_CHANGED: self._changes(kept, keep, interval_s),
            CARD_TOTALS: self._card_totals(kept, keep),
        }

    def _changes(self, kept: tuple[str, ...], keep: tuple[str, ...], interval_s: int) -> str:
        """NODE_CHANGED's expression. A window of one interval and a millisecond holds a figure's sample of the
        evaluation before and this one's (a range's start is closed in Prometheus 2, open in 3): a series moved
        where they differ. One read now or one interval back that has not both (it came, went, or lingers: no
        staleness marker ended it, as after a restart, and a read drops it once its last sample is a lookback
        old, at no evaluation's moment) is named at each evaluation until it is read by neither."""
        window = f"[{interval_s * 1000 + 1}ms]"
        moved = []
        for name, extra in WATCHED_SERIES.items():
            series = self._recorded_sel(name, extra)
            both = f"{series}{window}"
            moved.append(
                f"changes({both}) > 0"
                f" or (({series} or {series} offset {interval_s}s) unless count_over_time({both}) == 2)"
            )
        totals = self._recorded_sel(CARD_TOTALS)
        since = f"max by ({_by(*keep)}) (timestamp({totals} offset {interval_s}s)) > time() - {interval_s + 0.0005!r}"
        at = f"count by ({_by(*keep)}) ({totals}) * 0 + time()"
        return (
            f"count by ({_by(*kept)}) ({' or '.join(moved)}) * 0 + time()"
            f' or label_replace({since}, "changes", "since", "", "")'
            f' or label_replace({at}, "changes", "at", "", "")'
        )

    @property
    def nodes_age(self) -> str:
        """The age in seconds of each reporting node's newest sample (within Prometheus's 5 min lookback); with
        the rules, as it was at their last evaluation (a node is judged stale up to a rule interval later)."""
        if self.rules:
            return self._recorded(NODE_AGE)
        return f"time() - max by ({_by(*NODE_LABELS)}) (timestamp({self.sel('DCGM_FI_DEV_FB_USED')}))"

    @property
    def nodes_seen(self) -> str:
        """Every node that reported within LOOK_BACK: one that is missing from `nodes_age` stopped reporting."""
        return f"count by ({_by(*NODE_LABELS)}) (last_over_time({self.sel('DCGM_FI_DEV_FB_USED')}[{LOOK_BACK}]))"

    @property
    def engines(self) -> str:
        """The engines' KV usage (vLLM's new name, else the old) and requests running, per engine."""
        return f"max by ({_by(*ENGINE_KEY, '__name__')}) ({self.names(pattern((*NAMES.kv_usage, *NAMES.running)))})"

    def engines_over(self, over: float) -> str:
        """`engines` for the engines whose KV usage is at or over `over` only: their KV usage (a few series,
        where `engines` is two an engine). `>=`: a NaN passes no comparison, as it is no reading."""
        return f"max by ({_by(*ENGINE_KEY, '__name__')}) ({self.metric(NAMES.kv_usage)} >= {over!r})"

    def engine_running(self, over: float) -> str:
        """Requests running of the engines `engines_over` names: asked after it, only where it named some."""
        keys = _by(*ENGINE_KEY)
        return (
            f"max by ({keys}, __name__) ({self.metric(NAMES.running)} "
            f"and on ({keys}) ({self.metric(NAMES.kv_usage)} >= {over!r}))"
        )

    @property
    def model_gauges(self) -> str:
        """Per model (`model_name`), what the fleet screen's model table shows of the engines not read one by one:
        the largest KV usage and the requests running in all (label `gauge`). They hold where each engine of the
        model sends one series of each (`model_counts`)."""
        kv, running = self.metric(NAMES.kv_usage), self.metric(NAMES.running)
        return (
            f'label_replace(max by (model_name) ({kv}), "gauge", "kv_usage_max", "", "") '
            f'or label_replace(sum by (model_name) ({running}), "gauge", "requests_running", "", "")'
        )

    @property
    def model_counts(self) -> str:
        """Per model, how many engines send a KV usage and how many requests running (label `gauge`): what says
        `model_gauges` holds (as many as the model's engines: none stopped, none sent twice under other labels).
        An engine's KV usage counted by the first of its names it has (`or`: vLLM 0.9 and 0.10 send it under
        both of theirs); no engine sends two of the names of requests running. It changes only with the pools'
        series (a scrape target's series come and go together) or a target that is down, which the reader reads
        itself: read with the pools."""
        kv_first = " or ".join(self.sel(name) for name in NAMES.kv_usage)
        return (
            f'label_replace(count by (model_name) ({kv_first}), "gauge", "kv_usage_engines", "", "") '
            f'or label_replace(count by (model_name) ({self.metric(NAMES.running)}), "gauge", '
            '"requests_running_engines", "", "")'
        )

    @property
    def waiting(self) -> str:
        """Requests waiting per engine, only where not 0: an engine `engine_counters` names and this does not
        has none waiting. A fleet at rest sends no series here (one an engine, before). `!= 0`, not `> 0`: NaN
        or a negative count is no reading, said as unknown, never read as 0."""
        return f"max by ({_by(*ENGINE_KEY)}) ({self.metric(NAMES.waiting)} != 0)"

    @property
    def swapped(self) -> str:
        """Requests swapped out to CPU memory per engine, only where not 0 (vLLM v0's swapped queue)."""
        return f"max by ({_by(*ENGINE_KEY)}) ({self.metric(NAMES.swapped)} != 0)"

    @property
    def pools(self) -> str:
        """The engines' pools as they are (vLLM's `cache_config_info`: every CacheConfig field is a label), one
        series per engine."""
        return self.metric(NAMES.pools)

    def pools_changed(self, since_s: float) -> str:
        """The pools that are not as they were `since_s` ago: a pool series now that was not
        then (an engine that came, or restarted with other settings: every setting is a label) or one then
        that is not now (an engine gone). Empty while none changed, so the overview keeps the pools it read
        with the slow facts and reads them again only then."""
        offset = f"offset {max(1, round(since_s * 1000))}ms"  # Prometheus refuses `offset 0ms`
        return f"({self.pools} unless {self.pools} {offset}) or ({self.pools} {offset} unless {self.pools})"

    @property
    def sleeping(self) -> str:
        """Engines put to sleep (vLLM's sleep mode frees their weights or KV cache on purpose): the state each
        is in, per engine; awake engines are not in the answer."""
        selector = self.metric(NAMES.sleeping, 'sleep_state!="awake"')
        return f"max by ({_by(*ENGINE_KEY, 'sleep_state')}) ({selector} == 1)"

    @property
    def preemptions(self) -> str:
        """Preemptions per minute per engine over the last 2 minutes, only where there were some: an engine
        `engine_counters` names and this does not had none (`!= 0`: a NaN rate is no reading, not 0)."""
        return f"60 * sum by ({_by(*ENGINE_KEY)}) (rate({self.metric(NAMES.preemptions)}[2m])) != 0"

    @property
    def engine_counters(self) -> str:
        """Which engines export requests waiting, and which have a preemption rate (2 min of the counter), in
        label `gauge` (the FleetEngine field): what lets `waiting` and `preemptions` leave out the engines at
        zero, where an engine missing from both would otherwise read as unknown; and, as RATE_PENDING, which
        export the preemption counter with no rate yet: a sample in the last minute, fewer than 2 in the last 2
        (an engine just started, not one that stopped exporting a while ago). One series an engine and
        gauge, read with the pools (a slow fact, read again when an engine comes, goes or restarts, and while
        some rate is pending)."""
        keys = _by(*ENGINE_KEY)
        preempted = self.metric(NAMES.preemptions)
        waiting = f"count by ({keys}) ({self.metric(NAMES.waiting)})"
        rate = f"count by ({keys}) (rate({preempted}[2m]))"
        pending = f"count by ({keys}) (count_over_time({preempted}[1m])) unless {rate}"
        return (
            f'label_replace({waiting}, "gauge", "requests_waiting", "", "") '
            f'or label_replace({rate}, "gauge", "preemptions_per_min", "", "") '
            f'or label_replace({pending}, "gauge", {string(RATE_PENDING)}, "", "")'
        )

    @property
    def node_findings(self) -> str:
        """The findings `gpumem-tui export` raises on nodes that run it (docs/export.md), judged there against
        each engine's plan: what Prometheus alone cannot say (weights, KV pool, who else holds a GPU). The value
        is each series' sample time: only a node's newest scrape counts, so a finding that cleared is not read
        again from a series the lookback still returns (backfilled or remote-written data has no staleness
        markers). Each finding comes with its words (`gpumem_finding_info`, WORDED: as few series as the findings
        that need a look) and without: an exporter that publishes none (older, `refresh_failed`) still names its
        findings."""
        words = self.sel("gpumem_finding_info", as_matcher(WORDED))
        return (
            f"max by ({_by(*FINDING_KEY, *FINDING_WORDS)}) (timestamp({words})) "
            f"or max by ({_by(*FINDING_KEY)}) (timestamp({self.sel('gpumem_finding_active')}))"
        )

    def targets_down(self, jobs: list[str] | None = None) -> str:
        """Scrape targets that failed (`up == 0`) in a job that served an engine's pools within LOOK_BACK; with
        `jobs`, those jobs as the slow facts read them (`pool_jobs`): the same targets, without a refresh
        looking an hour back over every pool (at 10,000 engines, 0.12 s of the server's CPU a refresh)."""
        if jobs:
            wanted = "|".join(literal_regex(job) for job in sorted(jobs))
            return f"{self.sel('up', f'job=~{string(wanted)}')} == 0"
        return f"({self.sel('up')} == 0) and on (job) group by (job) (last_over_time({self.pools}[{LOOK_BACK}]))"

    @property
    def pool_jobs(self) -> str:
        """The jobs that served an engine's pools within LOOK_BACK, one series each (label `job`)."""
        return f"count by (job) (last_over_time({self.pools}[{LOOK_BACK}]))"

    def _exported_fine(self, query: str) -> str:
        """`query` less the GPUs whose free memory is at least `look` of the card, by the exporter's own
        figures (it publishes the total); a GPU without them is never fine."""
        if self.look is None:
            return query
        on = _by(*NODE_LABELS, "UUID")
        free = f"max by ({on}) ({self.sel('gpumem_gpu_memory_free_bytes')})"
        total = f"max by ({on}) ({self.sel('gpumem_gpu_memory_total_bytes')})"
        return f"({query}) unless on ({on}) ({free} >= {self.look!r} * {total})"

    @property
    def exported_node_memory(self) -> str:
        """`gpumem-tui export`'s used, free, reserved and total bytes per node, each GPU once."""
        each = f"max by ({_by(*NODE_LABELS, 'UUID', '__name__')}) ({self.names(EXPORTED)})"
        return f"sum by ({_by(*NODE_LABELS, '__name__')}) ({each})"

    @property
    def exported_node_gpus(self) -> str:
        """GPUs per node and card model in `gpumem-tui export`'s series, per field."""
        each = f"max by ({_by(*NODE_LABELS, 'UUID', 'modelName', '__name__')}) ({self.names(EXPORTED)})"
        return f"count by ({_by(*NODE_LABELS, 'modelName', '__name__')}) ({each})"

    @property
    def exported_gpu_memory(self) -> str:
        """`gpumem-tui export`'s memory per GPU; with `look`, only the GPUs that need one."""
        return self._exported_fine(
            f"max by ({_by(*NODE_LABELS, 'UUID', 'gpu', 'modelName', '__name__')}) ({self.names(EXPORTED)})"
        )

    @property
    def node_processes(self) -> str:
        """Bytes that processes that are not an engine hold per node (`gpumem-tui export`'s, every row of
        every GPU: the largest processes and the `other` rest)."""
        each = f"max by ({_by(*NODE_LABELS, 'UUID', 'pid')}) ({self.sel('gpumem_process_memory_used_bytes')})"
        return f"sum by ({_by(*NODE_LABELS)}) ({each})"

    @property
    def gpu_processes(self) -> str:
        """Each process that is not an engine on each GPU, as `gpumem-tui export` bounds them (its
        `--top-processes` per GPU and one `other` row); with `look`, on the GPUs that need one."""
        labels = _by(*NODE_LABELS, "UUID", "pid", "process_name", *POD_LABELS)
        return self._exported_fine(f"max by ({labels}) ({self.sel('gpumem_process_memory_used_bytes')})")

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
        return f"max by ({_by(*EXPORTED_ENGINE, '__name__')}) ({self.names(pattern)})"

    @property
    def exporter_gpus(self) -> str:
        """One GPU (its UUID) of each node that runs `gpumem-tui export`: which of dcgm-exporter's nodes it is,
        where the label read as the node names it differently (`--node-label`). One series per node."""
        each = f"max by ({_by(*NODE_LABELS, 'UUID')}) ({self.sel('gpumem_gpu_memory_total_bytes')})"
        return f"topk by ({_by(*NODE_LABELS)}) (1, {each})"

    @property
    def exporters_seen(self) -> str:
        """Nodes whose `gpumem-tui export` published within LOOK_BACK, each with the Unix time Prometheus stamped
        its newest sample with: one that stopped is still named (stale) past the 5 min lookback, as `nodes_seen`
        names dcgm-exporter's. A subquery, as `timestamp()` of a range function's result is the evaluation time,
        not the sample's; its 5 min steps each see the 5 min before them (Prometheus's default lookback), so no
        sample falls between two (1 min steps cost about 3 times as much at 1,000 nodes: bench/fleet_seen.py).
        One series a node, read as a slow fact."""
        newest = f"last_over_time(timestamp({self.sel('gpumem_sample_timestamp_seconds')})[{LOOK_BACK}:5m])"
        return f"max by ({_by(*NODE_LABELS)}) ({newest})"

    @property
    def exporters_age(self) -> str:
        """Nodes that run `gpumem-tui export`, and the age in seconds of the newest sample each published."""
        return f"time() - max by ({_by(*NODE_LABELS)}) (timestamp({self.sel('gpumem_sample_timestamp_seconds')}))"
