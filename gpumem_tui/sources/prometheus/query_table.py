"""Every Prometheus query of the fleet, one record each: where its series come from, which read asks it and how
often, whether it has a recorded form and a node-narrowed form, and what it answers (its demo answer). The
fleet's reads, the node drill-down, `gpumem-tui export`'s read and the demo take their lists from here; the
engines' queries ask for the series the engine registry names (engine_series.py). Built once, at import.

Adding a query: its record here, its PromQL builder `Queries.<name>` (queries.py; `NodeQueries.<name>` too
where a node's drill-down asks it), its series in the engine registry where an engine serves them, and a
test of what reads its answer (docs/design/queries.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from gpumem_tui.sources.prometheus.answer_forms import (
    And,
    By,
    CountValues,
    Either,
    Form,
    Labelled,
    Only,
    Pick,
    Rate,
    Stamped,
    Top,
    Unless,
)
from gpumem_tui.sources.prometheus.engine_series import NAMES, pattern
from gpumem_tui.sources.prometheus.queries import (
    ENGINE_BANDS,
    ENGINE_KEY,
    EXPORTED,
    EXPORTED_ENGINE,
    FB,
    FB_CHANGING,
    FINDING_KEY,
    FINDING_WORDS,
    GPU_KEY,
    LOOK_BACK_S,
    NODE_CHANGED,
    NODE_GPUS,
    NODE_LABELS,
    POD_LABELS,
    RATE_PENDING,
    RECORDED,
    WORDED,
    Queries,
    literal_regex,
)

Source = Literal["dcgm-exporter", "engine", "gpumem-tui export", "prometheus"]
"""Whose series it reads: dcgm-exporter's (read with --node-label and --pod-label), the engines' own, the
nodes' `gpumem-tui export`'s, or the server's (`up`, the recording rules' names)."""
Pace = Literal["refresh", "over", "facts", "pools", "gated", "asked"]
"""How often the overview asks it: each refresh; in `engines`' place at the fleet screen's refreshes between its
reads of the pools (`Queries.over`); with the slow facts; with them and again when an engine came, went or
restarted (the pools); with each read once a first query says some node runs `gpumem-tui export`
(gpumem_export.GATE); or when what it is asked with is known (an argument: bounds, a time, nodes)."""
NodeRound = Literal["first", "engines"]
"""When a node's drill-down asks it (node_queries.py): by the node's labels first, or then by its pods."""


@dataclass(frozen=True)
class Query:
    """One query. Its builder is `Queries.<name>`: a property, or a method of its argument."""

    name: str
    source: Source
    answer: Form | Callable[..., Form]
    """What it answers (answer_forms.py), as a function of its argument where it takes one."""
    full: bool = False
    """The full read (every GPU one by one) asks it."""
    overview: Pace | None = None
    """How often the overview asks it; None: never."""
    quiet: bool = False
    """Its answer is mostly empty: sent with the other quiet ones as one request (fleet.ask)."""
    recorded: bool = False
    """It reads the `gpumem:*` series of `gpumem-tui fleet rules` where the server has them."""
    node: NodeRound | None = None

    def promql(self, queries: Queries, *args: object) -> str:
        """Its PromQL with these settings (and its argument)."""
        built = getattr(queries, self.name)
        return built(*args) if callable(built) else built

    def demo(self, *args: object) -> Form:
        """What it answers (given its argument, where it takes one)."""
        return self.answer(*args) if callable(self.answer) else self.answer


NODE = NODE_LABELS
HOUR_S = LOOK_BACK_S


def _cards(names: str, *keep: str) -> By:
    """Each card's series once (by its UUID), as `Queries._cards` reads them."""
    return By("max", (*NODE, "UUID", *keep, "__name__"), Pick(names))


def _card_totals() -> Form:
    per_gpu = By("max", (*NODE, "UUID", "modelName", "__name__"), Pick(FB))
    return CountValues("total", ("modelName",), By("sum", (*NODE, "UUID", "modelName"), per_gpu))


def _node_low(bounds: Mapping[str, float]) -> Form:
    parts = tuple(
        Only(By("max", (*NODE, "UUID", "modelName"), Pick("DCGM_FI_DEV_FB_FREE", (("modelName", "=", card),))), "<", b)
        for card, b in sorted(bounds.items())
    )
    return By("count", (*NODE, "modelName"), Either(parts))


def _gpu_detail(nodes: Mapping[str, list[str]]) -> Form:
    parts = []
    for label, names in sorted(nodes.items()):
        found = "|".join(literal_regex(n) for n in sorted(names))
        if label == "instance":
            found = f"({found})(:[0-9]+)?|\\[({found})\\](:[0-9]+)?"
        parts.append(By("max", (*NODE, *GPU_KEY, "__name__"), Pick(FB, ((label, "=~", found),))))
    return Either(tuple(parts))


def _rules_named() -> Either:
    return Either(tuple(Labelled(By("count", (), Pick(name)), "recorded", name) for name in RECORDED))


def _rules_present() -> Form:
    reporting = By("count", NODE, Pick("DCGM_FI_DEV_FB_USED"))
    unrecorded = By("count", (), Unless(reporting, Pick(NODE_GPUS), NODE))
    return Either((*_rules_named().parts, Labelled(unrecorded, "unrecorded", "nodes")))


def _pools_changed(since_s: float) -> Form:
    offset = max(1, round(since_s * 1000)) / 1000
    now, then = Pick(pattern(NAMES.pools)), Pick(pattern(NAMES.pools), offset=offset)
    return Either((Unless(now, then), Unless(then, now)))


def _first_of(names: tuple[str, ...]) -> Form:
    """Each series of the first of these names its labels have (`a or b`)."""
    return Either(tuple(Pick(name) for name in names))


def _model_gauges() -> Form:
    return Either(
        (
            Labelled(By("max", ("model_name",), Pick(pattern(NAMES.kv_usage))), "gauge", "kv_usage_max"),
            Labelled(By("sum", ("model_name",), Pick(pattern(NAMES.running))), "gauge", "requests_running"),
        )
    )


def _model_counts() -> Form:
    return Either(
        (
            Labelled(By("count", ("model_name",), _first_of(NAMES.kv_usage)), "gauge", "kv_usage_engines"),
            Labelled(By("count", ("model_name",), Pick(pattern(NAMES.running))), "gauge", "requests_running_engines"),
        )
    )


def _engines_over(over: float) -> Form:
    return By("max", (*ENGINE_KEY, "__name__"), Only(Pick(pattern(NAMES.kv_usage)), ">=", over))


def _engine_running(over: float) -> Form:
    over_kv = Only(Pick(pattern(NAMES.kv_usage)), ">=", over)
    return By("max", (*ENGINE_KEY, "__name__"), And(Pick(pattern(NAMES.running)), over_kv, ENGINE_KEY))


def _engine_counters() -> Form:
    preempted = pattern(NAMES.preemptions)
    rated = By("count", ENGINE_KEY, Rate(preempted))
    pending = Unless(By("count", ENGINE_KEY, Pick(preempted, within=60.0)), rated)
    return Either(
        (
            Labelled(By("count", ENGINE_KEY, Pick(pattern(NAMES.waiting))), "gauge", "requests_waiting"),
            Labelled(rated, "gauge", "preemptions_per_min"),
            Labelled(pending, "gauge", RATE_PENDING),
        )
    )


SLEEPING = Pick(pattern(NAMES.sleeping), (("sleep_state", "!=", "awake"),))

DCGM: tuple[Query, ...] = (
    Query("gpu_memory", "dcgm-exporter", By("max", (*NODE, *GPU_KEY, "__name__"), Pick(FB)), full=True, node="first"),
    Query("gpu_detail", "dcgm-exporter", _gpu_detail, overview="asked"),
    Query(
        "node_memory",
        "dcgm-exporter",
        By("sum", (*NODE, "__name__"), _cards(FB_CHANGING)),
        overview="refresh",
        recorded=True,
    ),
    Query(
        "node_least_free",
        "dcgm-exporter",
        By("min", (*NODE, "modelName"), By("max", (*NODE, "UUID", "modelName"), Pick("DCGM_FI_DEV_FB_FREE"))),
        overview="refresh",
        recorded=True,
    ),
    Query(
        "node_gpus",
        "dcgm-exporter",
        By("count", (*NODE, "modelName", "__name__"), _cards(FB, "modelName")),
        overview="facts",
        recorded=True,
    ),
    Query(
        "node_reserved",
        "dcgm-exporter",
        By("sum", (*NODE, "__name__"), _cards("DCGM_FI_DEV_FB_RESERVED")),
        overview="facts",
        recorded=True,
    ),
    Query(
        "gpu_instances",
        "dcgm-exporter",
        By(
            "count",
            (*NODE, *GPU_KEY, "__name__"),
            Pick(f"{FB}|DCGM_FI_PROF_GR_ENGINE_ACTIVE", (("GPU_I_ID", "!=", ""),)),
        ),
        full=True,
        overview="facts",
    ),
    Query(
        "gpu_pods",
        "dcgm-exporter",
        By("count", (*NODE, *GPU_KEY, *POD_LABELS), Pick("DCGM_FI_DEV_FB_USED")),
        full=True,
        overview="facts",
        node="first",
    ),
    Query(
        "nodes_age",
        "dcgm-exporter",
        By("min", NODE, Pick("DCGM_FI_DEV_FB_USED", value="age")),
        full=True,
        overview="refresh",
        recorded=True,
        node="first",
    ),
    Query(
        "nodes_seen",
        "dcgm-exporter",
        By("count", NODE, Pick("DCGM_FI_DEV_FB_USED", within=HOUR_S)),
        full=True,
        overview="facts",
        node="first",
    ),
    Query("card_totals", "dcgm-exporter", _card_totals(), overview="facts", recorded=True),
    Query("node_low", "dcgm-exporter", _node_low, overview="asked", recorded=True),
)
"""dcgm-exporter's GPU memory: per GPU (the full read, and the overview's nodes that need a look), per node."""

SERVER: tuple[Query, ...] = (
    Query("rules_present", "prometheus", _rules_present(), overview="facts"),
    Query("rules_named", "prometheus", _rules_named(), overview="asked"),
    Query("rules_evaluated", "prometheus", By("max", (), Pick(RECORDED[-1], value="time")), overview="asked"),
    Query("node_changes", "prometheus", Pick(NODE_CHANGED), overview="asked"),  # the demo records no rules
)
"""Which `gpumem:*` series of `gpumem-tui fleet rules` the server has (first_read.py asks the second), when
they were last evaluated and which nodes' figures that moved (kept_recorded.py)."""

ENGINES: tuple[Query, ...] = (
    Query(
        "engines",
        "engine",
        By("max", (*ENGINE_KEY, "__name__"), Pick(pattern((*NAMES.kv_usage, *NAMES.running)))),
        full=True,
        overview="refresh",
        node="engines",
    ),
    Query("engines_over", "engine", _engines_over, overview="over"),
    Query("engine_running", "engine", _engine_running, overview="asked"),
    Query("model_gauges", "engine", _model_gauges(), overview="over"),
    Query("model_counts", "engine", _model_counts(), overview="asked"),
    Query(
        "waiting",
        "engine",
        By("max", ENGINE_KEY, Only(Pick(pattern(NAMES.waiting)), "!=", 0)),
        full=True,
        overview="refresh",
        quiet=True,
    ),
    Query("pools", "engine", Pick(pattern(NAMES.pools)), full=True, overview="pools", node="engines"),
    Query("pools_changed", "engine", _pools_changed, overview="asked"),
    Query("engine_counters", "engine", _engine_counters(), full=True, overview="pools", node="engines"),
    Query(
        "sleeping",
        "engine",
        By("max", (*ENGINE_KEY, "sleep_state"), Only(SLEEPING, "==", 1)),
        full=True,
        overview="refresh",
        quiet=True,
    ),
    Query(
        "swapped",
        "engine",
        By("max", ENGINE_KEY, Only(Pick(pattern(NAMES.swapped)), "!=", 0)),
        full=True,
        overview="refresh",
        quiet=True,
    ),
    Query(
        "preemptions",
        "engine",
        Only(By("sum", ENGINE_KEY, Rate(pattern(NAMES.preemptions), per=60.0)), "!=", 0),
        full=True,
        overview="refresh",
        quiet=True,
        node="engines",
    ),
)
"""The engines' own series, by the names the engine registry gives (engine_series.NAMES)."""

EXPORTER: tuple[Query, ...] = (
    Query(
        "exporters_seen",
        "gpumem-tui export",
        By("max", NODE, Stamped("gpumem_sample_timestamp_seconds", HOUR_S, 300.0)),
        full=True,
        overview="facts",
    ),
    Query(
        "node_findings",
        "gpumem-tui export",
        Either(
            (
                By(
                    "max",
                    (*FINDING_KEY, *FINDING_WORDS),
                    Pick("gpumem_finding_info", (WORDED,), value="time"),
                ),
                By("max", FINDING_KEY, Pick("gpumem_finding_active", value="time")),
            )
        ),
        full=True,
        overview="refresh",
        quiet=True,
        node="first",
    ),
    Query(
        "exporters_age",
        "gpumem-tui export",
        By("min", NODE, Pick("gpumem_sample_timestamp_seconds", value="age")),
        overview="gated",
    ),
    Query(
        "exported_node_memory", "gpumem-tui export", By("sum", (*NODE, "__name__"), _cards(EXPORTED)), overview="gated"
    ),
    Query(
        "exported_node_gpus",
        "gpumem-tui export",
        By("count", (*NODE, "modelName", "__name__"), _cards(EXPORTED, "modelName")),
        overview="gated",
    ),
    Query(
        "exported_gpu_memory",
        "gpumem-tui export",
        By("max", (*NODE, "UUID", "gpu", "modelName", "__name__"), Pick(EXPORTED)),
        overview="gated",
    ),
    Query(
        "node_processes",
        "gpumem-tui export",
        By("sum", NODE, By("max", (*NODE, "UUID", "pid"), Pick("gpumem_process_memory_used_bytes"))),
        overview="gated",
    ),
    Query(
        "gpu_processes",
        "gpumem-tui export",
        By("max", (*NODE, "UUID", "pid", "process_name", *POD_LABELS), Pick("gpumem_process_memory_used_bytes")),
        overview="gated",
        node="first",
    ),
    Query(
        "engine_plans",
        "gpumem-tui export",
        By(
            "sum",
            EXPORTED_ENGINE,
            By("max", (*EXPORTED_ENGINE, "UUID", "band"), Pick("gpumem_plan_bytes", (("band", "=~", ENGINE_BANDS),))),
        ),
        overview="gated",
    ),
    Query(
        "engine_plan_gpus",
        "gpumem-tui export",
        By("max", (*EXPORTED_ENGINE, "UUID"), Pick("gpumem_plan_bytes", (("band", "=", "weights"),))),
        overview="gated",
    ),
    Query(
        "exported_engines",
        "gpumem-tui export",
        By("max", (*EXPORTED_ENGINE, "__name__"), Pick("gpumem_engine_kv_cache_(usage_ratio|pool_tokens)")),
        overview="gated",
    ),
    Query(
        "exporter_gpus",
        "gpumem-tui export",
        Top(NODE, By("max", (*NODE, "UUID"), Pick("gpumem_gpu_memory_total_bytes"))),
        overview="gated",
    ),
)
"""The series of the nodes' own `gpumem-tui export` (docs/export.md): memory, processes, plans, findings."""


def _targets_down(jobs: list[str] | None = None) -> Form:
    if jobs:
        return Only(Pick("up", (("job", "=~", "|".join(literal_regex(job) for job in sorted(jobs))),)), "==", 0)
    return And(Only(Pick("up"), "==", 0), Pick(pattern(NAMES.pools), within=HOUR_S), ("job",))


TARGETS = (
    Query("targets_down", "prometheus", _targets_down, full=True, overview="refresh", quiet=True, node="engines"),
    Query("pool_jobs", "engine", By("count", ("job",), Pick(pattern(NAMES.pools), within=HOUR_S)), overview="pools"),
)
"""Scrape targets down (`up == 0`) in a job that served an engine's pools within the hour: the jobs are read
with the pools (`pool_jobs`), and each refresh asks for those jobs' targets alone."""

TABLE: dict[str, Query] = {q.name: q for q in (*DCGM, *SERVER, *ENGINES, *EXPORTER, *TARGETS)}


def names(keep: Callable[[Query], bool]) -> tuple[str, ...]:
    """The names of the queries `keep` keeps, in the table's order."""
    return tuple(q.name for q in TABLE.values() if keep(q))
