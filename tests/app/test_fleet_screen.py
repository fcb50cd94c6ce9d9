"""The fleet screen (`gpumem-tui fleet --demo`, `fleet --prometheus URL`): what a person must see, from a
sample read by a reader the test controls (the demo fleet, a hand-made hostile sample, a source that dies)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from gpumem_tui.app.fleet_app import FleetApp
from gpumem_tui.demo.fleet_answers import demo_sample
from gpumem_tui.sources.prometheus.client import PrometheusError
from gpumem_tui.sources.prometheus.records import Coverage, FleetEngine, FleetGpu, FleetNode, FleetSample
from tests.app.screen_text import screen_text
from tests.sources.prometheus.conftest import FLEET

GIB = 2**30


@pytest.fixture(scope="module")
def fleet_sample() -> FleetSample:
    return demo_sample(FLEET, 120, 5, "demo: 8 simulated nodes")


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _app(read, clock: Clock | None = None) -> FleetApp:
    return FleetApp(read, "http://prom.example:9090", interval_s=15, poll=False, clock=clock or Clock(0.0))


async def _text(app, pilot) -> str:
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()
    return " ".join(" ".join(screen_text(app)).split())


def _table(app, name: str) -> list[list[str]]:
    table = app.query_one(f"#{name}")
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def test_demo_fleet_header_models_nodes_and_findings(fleet_sample):
    async def read():
        return fleet_sample

    app = _app(read, Clock(fleet_sample.evaluated_at + 2))
    async with app.run_test(size=(160, 60)) as pilot:
        text = await _text(app, pilot)
        assert "8 nodes, 24 GPUs, 11 engines, 11 joined" in text
        assert "data age 0 s" in text
        models = _table(app, "fleet-models")
        assert [row[0] for row in models] == [
            "Qwen/Qwen2.5-7B",
            "meta-llama/Llama-3.1-70B",
            "meta-llama/Llama-3.1-8B-Instruct",
        ]
        seventy = models[1]
        assert seventy[1] == "kv_pool_short" and seventy[2] == "5"
        nodes = _table(app, "fleet-nodes")
        # most severe first: the critical nodes, then the warnings, the healthy last
        assert [row[0] for row in nodes][:2] == ["node-c", "node-h"]
        assert nodes[-1][0] == "node-f"
        assert "8 x NVIDIA H200" in nodes[-1][1] and "GiB" in nodes[-1][2]
        codes = {row[1]: row for row in _table(app, "fleet-findings")}
        # headroom_low: node-c's critical GPU and one counted finding per node whose GPUs are low as planned
        assert codes["kv_saturated"][2] == "3" and codes["headroom_low"][2] == "4"
        # planned memory is not read from Prometheus yet: unknown with its reason, never a number or "ok"
        assert "planned: unknown, because" in text
        # each unknown names whose it is: the first engine and how many more share the reason
        assert (
            "preemptions_per_min (Qwen/Qwen2.5-7B at team-b/vllm-code-5c4b7d9f6-m8n2p and 1 more): unknown, because "
            "no vllm:num_preemptions_total series" in text
        )
        assert "requests_waiting (meta-llama/Llama-3.1-8B-Instruct at node-c:8000): unknown, because its scrape" in text


async def test_outside_text_is_shown_literally():
    node = "node\x1b[31m-red\x1b]0;title\x07"
    model = "evil\nmodel[bold]x[/]"
    sample = FleetSample(
        source="http://prom.example:9090",
        evaluated_at=100.0,
        nodes=[
            FleetNode(
                name=node,
                gpus=1,
                cards={"H100\x1b[2J": 1},
                used_bytes=GIB,
                free_bytes=GIB,
                reserved_bytes=0,
                total_bytes=2 * GIB,
                engines=[f"{model} at ns/p"],
            )
        ],
        gpus=[FleetGpu(node=node, uuid="GPU-1", used_bytes=GIB)],
        engines=[FleetEngine(model_name=model, pod="p", namespace="ns", node=node, gpus=["GPU-1"], joined="found")],
        coverage=Coverage(nodes=1, gpus=1, engines=1, joined=1),
        data_age_s=1.0,
    )

    async def read():
        return sample

    app = _app(read, Clock(101.0))
    async with app.run_test(size=(160, 40)) as pilot:
        text = await _text(app, pilot)
        assert "\x1b" not in text
        assert "node\\x1b[31m-red" in text
        assert _table(app, "fleet-models")[0][0] == "evil\\nmodel[bold]x[/]"
        assert _table(app, "fleet-nodes")[0][0] == "node\\x1b[31m-red\\x1b]0;title\\x07"
        assert "1 x H100\\x1b[2J" in _table(app, "fleet-nodes")[0][1]


async def test_a_dead_source_degrades_the_header_not_the_app(fleet_sample):
    answers: list = [fleet_sample]

    async def read():
        answer = answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    clock = Clock(fleet_sample.evaluated_at)
    app = _app(read, clock)
    async with app.run_test(size=(160, 60)) as pilot:
        assert "state ok" in await _text(app, pilot)
        answers[0] = PrometheusError("http://prom.example:9090: connection refused", "down")
        clock.now += 15
        app.refresh_now()
        text = await _text(app, pilot)
        assert "stale: the last read failed" in text and "connection refused" in text
        assert "8 nodes, 24 GPUs" in text  # the last sample stays on screen
        clock.now += 60
        app.refresh_now()
        text = await _text(app, pilot)
        assert "down: no answer for 75 s" in text
        assert app.is_running and len(_table(app, "fleet-nodes")) == 8


async def test_a_source_down_from_the_start():
    async def read():
        raise PrometheusError("http://prom.example:9090: connection refused", "down")

    app = _app(read)
    async with app.run_test(size=(120, 40)) as pilot:
        text = await _text(app, pilot)
        assert "down: Prometheus cannot be reached: http://prom.example:9090: connection refused" in text
        assert _table(app, "fleet-nodes") == []


async def test_a_partial_answer_is_stale_with_its_reason(fleet_sample):
    partial = fleet_sample.model_copy(update={"state": "stale", "error": "query engines: timeout"})

    async def read():
        return partial

    app = _app(read, Clock(partial.evaluated_at))
    async with app.run_test(size=(160, 60)) as pilot:
        text = await _text(app, pilot)
        assert "state stale: part of the answer is missing: query engines: timeout" in text
        assert "state ok" not in text


async def test_a_slow_read_never_blocks_the_screen(fleet_sample):
    """A read that holds its thread (a slow join at thousands of nodes) runs off the UI's loop: the screen
    still answers keys while it waits."""
    release = threading.Event()
    started = threading.Event()

    async def read():
        started.set()
        release.wait(timeout=5)  # blocks whatever thread runs it
        return fleet_sample

    app = _app(read, Clock(fleet_sample.evaluated_at))
    began = time.monotonic()
    async with app.run_test(size=(160, 60)) as pilot:
        await asyncio.to_thread(started.wait, 5)
        await pilot.press("tab")
        await pilot.pause()
        answered = time.monotonic() - began
        release.set()
        text = await _text(app, pilot)
        assert answered < 4, f"the screen answered a key {answered:.1f} s after it started"
        assert "8 nodes, 24 GPUs" in text


async def test_a_join_read_earlier_says_its_age(fleet_sample):
    """The overview keeps the pod-to-GPU join up to 5 min: the header says how old it is, never passing it
    off as read now."""
    kept = fleet_sample.model_copy(update={"join_age_s": 200.0})

    async def read():
        return kept

    app = _app(read, Clock(kept.evaluated_at))
    async with app.run_test(size=(160, 60)) as pilot:
        assert "the pod-to-GPU join as read 200 s ago" in await _text(app, pilot)

    async def fresh():
        return fleet_sample

    app = _app(fresh, Clock(fleet_sample.evaluated_at))
    async with app.run_test(size=(160, 60)) as pilot:
        assert "join as read" not in await _text(app, pilot)
