"""Where `check` gets its samples: a simulated node stepped to --at, a recording walked to --at, or this node."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from gpumem_tui.catalog import Catalog
from gpumem_tui.cli.errors import NoSourceError, UsageError
from gpumem_tui.demo import ManualClock, Scenario, load_scenario
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.demo.plan import scenario_plan
from gpumem_tui.diagnosis.autoplan import EnginePlan, engine_plans
from gpumem_tui.diagnosis.diagnose import diagnose
from gpumem_tui.diagnosis.findings import Finding, Thresholds
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.node import Difference, differences, judge_node
from gpumem_tui.diagnosis.fleet.plans import plan_fleet
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.diagnosis.forensics import Forensics, Investigation, investigate, no_samples, result
from gpumem_tui.diagnosis.history import History
from gpumem_tui.diagnosis.overlays import ManualPlan
from gpumem_tui.models import Sample
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.feed import LiveFeed
from gpumem_tui.sources.host import HostSource
from gpumem_tui.sources.nvml import NvmlSource, NvmlUnavailable
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, PrometheusError
from gpumem_tui.sources.prometheus.node_feed import read_node
from gpumem_tui.sources.prometheus.node_history import NodeHistory, history_words, read_node_history
from gpumem_tui.sources.prometheus.node_queries import NodeQueries
from gpumem_tui.sources.prometheus.node_sample import node_sample
from gpumem_tui.sources.replay import RecordingError, RecordingReader

DEMO_STEP_S = 5.0


@dataclass
class Checked:
    """One check: the sample judged, its plans and findings, and the forensics of a recording."""

    sample: Sample
    plans: list[EnginePlan]
    findings: list[Finding]
    source: str
    where: str
    forensics: Forensics | None = None
    warnings: list[str] = field(default_factory=list)
    differences: list[Difference] | None = None
    """A node read from Prometheus: where its findings and `fleet check`'s for it differ, and why (None:
    not a fleet's node)."""
    forensics_of: str | None = None
    """What the forensics walked, in words, where it is not the recording or scenario checked (a node's
    history in Prometheus)."""


async def from_demo(
    name: str, at: float | None, seed: int | None, catalog: Catalog, manual: ManualPlan | None, thresholds: Thresholds
) -> Checked:
    scenario = load_scenario(name)
    at = scenario.story_s if at is None else at
    if at > scenario.duration_s:
        raise UsageError(f"--at {at:g}: scenario {scenario.name} lasts {scenario.duration_s:g} s")
    plan = manual or scenario_plan(scenario, catalog)
    clock = ManualClock()
    walk = Investigation(catalog, plan, thresholds)  # judged sample by sample, as the app does: exits explained
    feed = DemoFeed(name, clock, seed=seed)
    try:
        for moment in demo_moments(scenario, at, thresholds.forensics_window_s):
            clock.set(moment)
            walk.add(await feed.sample())
    finally:
        await feed.aclose()
    where = f"simulated node '{scenario.name}' at {at:g} s"
    if manual is None and plan is not None:
        where += f", against the plan it was made with ({plan.quantization or 'native precision'})"
    assert walk.previous is not None  # the walk added at least the sample at --at
    return checked(walk, walk.previous.source, where)


def checked(walk: Investigation, source: str, where: str, warnings: list[str] | None = None) -> Checked:
    """The check of a walk (a demo stepped to --at, a recording read to --at): its last sample, plans and
    findings, and its forensics, built alike for both."""
    assert walk.previous is not None  # the walk added at least the sample at --at
    return Checked(walk.previous, walk.plans, walk.findings, source, where, result(walk), warnings or [])


def demo_moments(scenario: Scenario, at: float, history_s: float) -> list[float]:
    """The moments a simulated node is sampled at to judge it at `at` (the last), every DEMO_STEP_S from
    where the TUI's first frame is (the story's start), so both judge the same history; from the scenario's
    beginning when asked about a moment before that. `check` and `export` walk the same."""
    opens = scenario.start_s if at >= scenario.start_s else 0.0
    start = max(opens, at - history_s)
    steps = int((at - start) // DEMO_STEP_S)
    return [start + k * DEMO_STEP_S for k in range(steps)] + [at]


def from_replay(
    path: str, at: float | None, catalog: Catalog, manual: ManualPlan | None, thresholds: Thresholds
) -> Checked:
    reader = RecordingReader(path)
    walk = Investigation(catalog, manual, thresholds)
    for sample in reader:
        if walk.past(sample, at):
            break
        walk.add(sample)
    if walk.previous is None:
        raise RecordingError(f"{path}: the recording holds no samples")
    warnings = list(reader.warnings)
    if at is not None and at > walk.offset:
        warnings.append(f"--at {at:g} is past the end of the recording ({walk.offset:g} s); checking the last sample")
    where = f"replay of {path} at {walk.offset:g} s"
    return checked(walk, f"replay:{path}", where, warnings)


async def from_live(
    endpoints: list[str], catalog: Catalog, manual: ManualPlan | None, thresholds: Thresholds
) -> Checked:
    nvml, host = NvmlSource(), HostSource()
    try:
        nvml.open()
    except NvmlUnavailable as exc:
        raise NoSourceError(str(exc)) from None
    # one sample, so it waits for every engine's answer (each bounded by the scraper's deadline)
    feed = LiveFeed(
        Collector(nvml, host, source="nvml"),
        host.command_lines,
        endpoints,
        engine_wait_s=None,
        look=host.proc.whereabouts,
    )
    try:
        sample = await feed.sample()
    finally:
        await feed.aclose()
        nvml.close()
    history = History()
    history.add(sample)
    plans = engine_plans(sample, catalog, manual)
    return Checked(sample, plans, diagnose(plans, sample, history, thresholds), "nvml", "this node (NVML)")


async def from_prometheus(
    connection: Connection,
    queries: NodeQueries,
    at: float | None,
    timeout_s: float,
    catalog: Catalog,
    manual: ManualPlan | None,
    thresholds: Thresholds,
    history_s: float | None = None,
) -> Checked:
    """One node of a Prometheus (`queries`: the node, the selector's matchers, the fleet's labels), judged as
    this node is (diagnose), with what only the fleet's reading of it says (diagnosis/fleet_node.py), and where
    that differs from `fleet check`'s findings for the node. With `history_s`, the forensics of its history over
    that span (range queries), walked as the node's screen walks it on `f`; a failed range read is a warning,
    the check of the moment stands."""
    moment = time.time() if at is None else at
    node = queries.node
    past: NodeHistory | None = None
    warnings: list[str] = []
    try:
        async with PrometheusClient(connection, query_timeout_s=timeout_s) as client:
            read = await read_node(client, queries, moment, stale)
            if history_s is not None:
                try:
                    past = await read_node_history(client, queries, moment, history_s, stale)
                except PrometheusError as exc:
                    warnings.append(f"forensics unknown, because the range read failed: {exc}")
    except PrometheusError as exc:
        raise NoSourceError(exc.said()) from None
    sample = node_sample(read, node)
    history = History()
    history.add(sample)
    plans = engine_plans(sample, catalog, manual)
    found = judge_node(diagnose(plans, sample, history, thresholds), read.fleet, thresholds)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(moment))
    where = f"node {node} in Prometheus {connection.url} at {when}"
    # `fleet check` plans each engine from the catalog: so is the fleet's side compared here
    said = differences(found, judge_fleet(plan_fleet(read.fleet, catalog), thresholds), node)
    forensics = None if past is None else investigate(past, catalog, manual, thresholds)
    if forensics is not None and past is not None:
        forensics = forensics.model_copy(update={"notes": past.warnings})
    elif past is not None:  # as the screen says it: nothing to walk, and why
        warnings.append(f"forensics: {no_samples(past.warnings)}")
    return Checked(
        sample,
        plans,
        found,
        "prometheus",
        where,
        forensics,
        [*read.fleet.warnings, *warnings],
        said,
        None if history_s is None else history_words(node, connection.url, at, history_s),
    )
