"""The exporter in-process over real HTTP: a scrape reads the last evaluation and never samples; a source
failing mid-run degrades the series, never the exporter; outside text reaches label values as is; the
processes that are not engines are bounded per GPU."""

from __future__ import annotations

import asyncio
import urllib.request

import pytest

from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.export.evaluation import Evaluator
from gpumem_tui.export.listener import resolve
from gpumem_tui.export.server import serve
from gpumem_tui.models import ProcessRecord, Sample, SourceError
from gpumem_tui.sources.feed import Feed
from tests.export.exporter import HOSTILE, scrape, value


class CountingFeed(Feed):
    """Gives its samples in turn (an exception is raised), the last again; counts the calls."""

    def __init__(self, *samples: Sample | Exception):
        self.samples, self.taken, self.name = list(samples), 0, "test"

    async def sample(self) -> Sample:
        self.taken += 1
        item = self.samples[min(self.taken, len(self.samples)) - 1]
        if isinstance(item, Exception):
            raise item
        return item


@pytest.fixture(scope="module")
def noisy() -> Sample:
    """The simulated node of noisy-neighbour 48 s in: the engine and a notebook on GPU 0."""

    async def one() -> Sample:
        feed = DemoFeed("noisy-neighbour", ManualClock(48))
        try:
            return await feed.sample()
        finally:
            await feed.aclose()

    return asyncio.run(one())


@pytest.fixture
def served():
    """serve(evaluator, ...) on a free loopback port; closed after the test."""
    servers = []

    def start(evaluator: Evaluator, top_processes: int = 5) -> str:
        server = serve(evaluator, resolve("127.0.0.1", 0), top_processes)
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.close()


def test_scrapes_read_the_last_evaluation_and_never_sample(noisy, catalog, served):
    feed = CountingFeed(noisy)
    evaluator = Evaluator(feed, Judge(catalog))
    url = served(evaluator)
    before = scrape(url)
    assert feed.taken == 0 and value(before, "gpumem_exporter_samples_total") == 0
    assert "gpumem_gpu_memory_used_bytes" not in before  # nothing read yet: no series, not zeros
    asyncio.run(evaluator.evaluate())
    for _ in range(7):
        series = scrape(url)
    assert feed.taken == 1 and value(series, "gpumem_exporter_samples_total") == 1
    assert value(series, "gpumem_gpu_memory_used_bytes", gpu="0") == noisy.gpus[0].memory_used_bytes
    asyncio.run(evaluator.evaluate())
    for _ in range(3):
        series = scrape(url)
    assert feed.taken == 2 and value(series, "gpumem_exporter_samples_total") == 2


def test_the_loop_samples_on_its_interval_not_per_scrape(noisy, catalog, served):
    feed = CountingFeed(noisy)
    evaluator = Evaluator(feed, Judge(catalog))
    url = served(evaluator)

    async def run_and_scrape() -> int:
        stop = asyncio.Event()
        loop = asyncio.create_task(evaluator.run(3600, stop))
        while feed.taken == 0 or evaluator.latest.samples == 0:
            await asyncio.sleep(0.01)
        for _ in range(10):
            await asyncio.to_thread(scrape, url)
        stop.set()
        await loop
        return feed.taken

    assert asyncio.run(run_and_scrape()) == 1


def test_a_source_failing_mid_run_degrades_the_series_not_the_exporter(noisy, catalog, served):
    no_nvml = noisy.model_copy(
        update={"gpus": [], "processes": [], "errors": [SourceError(source="nvml", message="driver not loaded")]}
    )
    feed = CountingFeed(noisy, RuntimeError("the GPU read went away"), no_nvml, noisy)
    evaluator = Evaluator(feed, Judge(catalog))
    url = served(evaluator)

    asyncio.run(evaluator.evaluate())
    assert value(scrape(url), "gpumem_exporter_source_up", source="gpus") == 1

    asyncio.run(evaluator.evaluate())  # the feed raised
    series = scrape(url)
    assert value(series, "gpumem_exporter_source_up", source="gpus") == 0
    assert "gpumem_gpu_memory_used_bytes" not in series and "gpumem_plan_bytes" not in series
    assert value(series, "gpumem_finding_active", code="refresh_failed") == 1
    assert value(series, "gpumem_exporter_failed_refreshes_total") == 1
    assert value(series, "gpumem_exporter_last_evaluation_timestamp_seconds") is not None

    asyncio.run(evaluator.evaluate())  # a sample whose GPU reading failed whole
    series = scrape(url)
    assert value(series, "gpumem_exporter_source_up", source="gpus") == 0
    assert "gpumem_gpu_memory_used_bytes" not in series

    asyncio.run(evaluator.evaluate())
    series = scrape(url)
    assert value(series, "gpumem_exporter_source_up", source="gpus") == 1
    assert value(series, "gpumem_gpu_memory_used_bytes", gpu="0") == noisy.gpus[0].memory_used_bytes
    assert value(series, "gpumem_finding_active", code="refresh_failed") is None


def test_outside_text_reaches_label_values_as_is(noisy, catalog, served):
    renamed = [p.model_copy(update={"name": HOSTILE}) if p.pid == 3100 else p for p in noisy.processes]
    bad_bytes = ProcessRecord(pid=4242, gpu_index=0, gpu_memory_bytes=2**30, name="job\udcff")  # not UTF-8
    sample = noisy.model_copy(update={"processes": [*renamed, bad_bytes]})
    evaluator = Evaluator(CountingFeed(sample), Judge(catalog))
    url = served(evaluator)
    asyncio.run(evaluator.evaluate())
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
    series = scrape(url)
    assert value(series, "gpumem_process_memory_used_bytes", pid="3100", process_name=HOSTILE) == 20 * 2**30
    assert value(series, "gpumem_process_memory_used_bytes", pid="4242", process_name="job\\xff") == 2**30
    assert "gpumem_fake" not in series


def test_processes_are_bounded_per_gpu_and_the_rest_summed(noisy, catalog, served):
    extra = [
        ProcessRecord(pid=5000 + k, gpu_index=0, gpu_memory_bytes=(k + 1) * 2**20, name=f"worker-{k}")
        for k in range(12)
    ]
    sample = noisy.model_copy(update={"processes": [*noisy.processes, *extra]})
    evaluator = Evaluator(CountingFeed(sample), Judge(catalog))
    url = served(evaluator, top_processes=3)
    asyncio.run(evaluator.evaluate())
    rows = scrape(url)["gpumem_process_memory_used_bytes"]
    pids = [labels["pid"] for labels, _ in rows]
    assert pids == ["3100", "5011", "5010", "other"]  # the largest three, then the rest as one row
    others = [p for p in sample.processes if p.pid != 2100]
    assert sum(v for _, v in rows) == sum(p.gpu_memory_bytes for p in others)
    assert rows[-1][1] == sum((k + 1) * 2**20 for k in range(10))
