"""A finding about a GPU routes with the workload it hurts (issue 30): it carries the `model_name`, `engine`,
`namespace` and `pod` of the engine(s) on that GPU (one series per engine where two share it), never their
`endpoint`, and the offending process's own pod as `process_namespace`/`process_pod`. The labels are kept while
the finding stays raised, so an engine that restarts in a new pod mid-incident does not change them."""

from __future__ import annotations

import asyncio

import pytest

from gpumem_tui.catalog import load_catalog
from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.demo.plan import scenario_plan
from gpumem_tui.demo.scenario import load_scenario
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.export.evaluation import Evaluator
from gpumem_tui.export.planned import finding_rows
from gpumem_tui.models import Sample
from gpumem_tui.sources.feed import Feed
from tests.export.exporter import ENGINE_POD, NOTEBOOK_POD, SECOND_POD, exporter, pods_scenario, scrape

AT = "48"
"""noisy-neighbour 48 s in: the notebook holds 20 GiB beside the engine on GPU 0."""


def _series(series, name: str, code: str) -> list[dict[str, str]]:
    return [labels for labels, _ in series.get(name, []) if labels["code"] == code]


def test_a_foreign_process_names_the_engine_s_pod_and_its_own(tmp_path):
    with exporter("--demo", str(pods_scenario(tmp_path)), "--at", AT) as url:
        series = scrape(url)
    (active,) = _series(series, "gpumem_finding_active", "foreign_process")
    assert (active["namespace"], active["pod"]) == ENGINE_POD
    assert active["model_name"] == "meta-llama/Llama-3.1-8B-Instruct" and active["engine"] == "0"
    assert (active["process_namespace"], active["process_pod"]) == NOTEBOOK_POD
    assert (active["gpu"], active["pid"], active["endpoint"]) == ("0", "3100", "")  # the engine's URL is not its
    (words,) = _series(series, "gpumem_finding_info", "foreign_process")
    assert {k: v for k, v in words.items() if k not in ("title", "try_this")} == active
    (headroom,) = _series(series, "gpumem_finding_active", "headroom_low")  # a GPU's finding names no process
    assert (headroom["namespace"], headroom["pod"], headroom["process_pod"]) == (*ENGINE_POD, "")


def test_a_gpu_two_engines_share_has_one_series_per_engine(tmp_path):
    with exporter("--demo", str(pods_scenario(tmp_path, shared=True)), "--at", AT) as url:
        series = scrape(url)
    found = _series(series, "gpumem_finding_active", "foreign_process")
    assert sorted((f["namespace"], f["pod"]) for f in found) == sorted([ENGINE_POD, SECOND_POD])
    assert {f["model_name"] for f in found} == {"meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B"}
    assert {(f["pid"], f["process_pod"], f["severity"]) for f in found} == {("3100", NOTEBOOK_POD[1], "warning")}
    assert len(_series(series, "gpumem_finding_info", "foreign_process")) == 2


class Samples(Feed):
    """Gives its samples in turn."""

    def __init__(self, *samples: Sample):
        self.samples, self.name = list(samples), "test"

    async def sample(self) -> Sample:
        return self.samples.pop(0)


@pytest.fixture(scope="module")
def k8s(tmp_path_factory) -> tuple[Sample, Judge]:
    """The pods scenario's sample at AT, and the judge `export --demo` judges it with."""
    path = str(pods_scenario(tmp_path_factory.mktemp("pods")))

    async def one() -> Sample:
        feed = DemoFeed(path, ManualClock(float(AT)))
        try:
            return await feed.sample()
        finally:
            await feed.aclose()

    catalog = load_catalog()
    return asyncio.run(one()), Judge(catalog, scenario_plan(load_scenario(path), catalog))


def _engine_moved(sample: Sample, pod: str) -> Sample:
    """The same moment with the engine's processes in another pod (a new ReplicaSet's), the notebook kept."""
    moved = [p.model_copy(update={"pod": pod}) if p.pid != 3100 else p for p in sample.processes]
    return sample.model_copy(update={"processes": moved})


def _gone(sample: Sample) -> Sample:
    return sample.model_copy(update={"processes": [p for p in sample.processes if p.pid != 3100]})


def _pods(evaluator: Evaluator) -> list[tuple[str, str]]:
    evaluation = asyncio.run(evaluator.evaluate())
    active = finding_rows(evaluation)[0].family.samples
    return [(s.labels["namespace"], s.labels["pod"]) for s in active if s.labels["code"] == "foreign_process"]


def test_the_labels_stay_while_the_finding_is_raised(k8s):
    sample, judge = k8s
    renamed = "serving/vllm-llama-8b-7a8b9c0d1-q4r5s"
    evaluator = Evaluator(
        Samples(sample, _engine_moved(sample, renamed), _gone(sample), _engine_moved(sample, renamed)), judge
    )
    assert _pods(evaluator) == [ENGINE_POD]
    assert _pods(evaluator) == [ENGINE_POD]  # the engine's pod renamed mid-incident: the alert keeps its identity
    assert _pods(evaluator) == []  # the notebook left: the finding cleared
    assert _pods(evaluator) == [tuple(renamed.split("/"))]  # raised again: the pod there now
