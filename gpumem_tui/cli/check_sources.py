"""Where `check` gets its samples: a simulated node stepped to --at, or a recording walked to --at. This node
(check_live.py) and a node in Prometheus (check_prometheus.py) are read by modules of their own, imported
only for them: a check of the demo loads neither the installed NVML binding nor the fleet's reader.

The simulated node is sampled in process (`demo.fleet_node.FleetNode`), as the simulated fleet samples its
nodes: the samples the node demo's feed gives over real HTTP (tests/sources/test_fleet_node.py holds them
equal at every moment `check` walks), without its servers, threads, event loop or HTTP client, which were a
quarter of the command's CPU."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpumem_tui.catalog import Catalog
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.demo import ManualClock, Scenario, load_scenario
from gpumem_tui.demo.fleet_node import FleetNode
from gpumem_tui.demo.plan import scenario_plan
from gpumem_tui.diagnosis.autoplan import EnginePlan
from gpumem_tui.diagnosis.findings import Finding, Thresholds
from gpumem_tui.diagnosis.forensics import RECORDED, Forensics, Investigation, result
from gpumem_tui.diagnosis.overlays import ManualPlan
from gpumem_tui.models import Sample

if TYPE_CHECKING:
    from gpumem_tui.diagnosis.fleet.node import Difference

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
    origin_s: float = 0.0
    """Where the forensics' offsets start, in the time base `walked` names: a simulated node's walk begins
    `origin_s` seconds into its scenario (a recording's at 0 s), so the timeline reads in scenario seconds as the
    header does."""
    walked: str = "recording"
    """What the forensics' time base counts into, in words: the `recording`, or the `scenario`."""


def from_demo(
    name: str, at: float | None, seed: int | None, catalog: Catalog, manual: ManualPlan | None, thresholds: Thresholds
) -> Checked:
    """The scenario judged sample by sample up to `at` (its story's moment by default), as the app judges it."""
    scenario = load_scenario(name)
    at = scenario.story_s if at is None else at
    if at > scenario.duration_s:
        raise UsageError(f"--at {at:g}: scenario {scenario.name} lasts {scenario.duration_s:g} s")
    plan = manual or scenario_plan(scenario, catalog)
    clock = ManualClock()
    walk = Investigation(catalog, plan, thresholds)  # judged sample by sample, as the app does: exits explained
    node = FleetNode(scenario, clock, seed=seed)
    moments = demo_moments(scenario, at, thresholds.forensics_window_s)
    for moment in moments:
        clock.set(moment)
        walk.add(node.sample())
    where = f"simulated node '{scenario.name}' at {at:g} s"
    if manual is None and plan is not None:
        where += f", against the plan it was made with ({plan.quantization or 'native precision'})"
    assert walk.previous is not None  # the walk added at least the sample at --at
    return replace(checked(walk, walk.previous.source, where), origin_s=moments[0], walked="scenario")


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
    from gpumem_tui.sources.replay import RecordingError, RecordingReader  # a recording's reader, for one only

    reader = RecordingReader(path)
    walk = Investigation(catalog, manual, thresholds)
    walk.follow(reader.events, RECORDED)  # an exit that follows a signal sent with `k`: stopped, not a crash
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
