"""The fleet screen (`gpumem-tui fleet --demo`, `fleet --prometheus URL`): what a person must see, from a
sample read by a reader the test controls (the demo fleet, a hand-made hostile sample, a source that dies)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.fleet import Fleet, FleetScreen
from gpumem_tui.demo.fleet_answers import demo_sample
from gpumem_tui.sources.prometheus.client import PrometheusError
from gpumem_tui.sources.prometheus.records import (
    Coverage,
    FleetEngine,
    FleetGpu,
    FleetNode,
    FleetSample,
    NodeFinding,
)
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


def _fleet(read, clock: Clock | None = None, **kwargs) -> Fleet:
    return Fleet(read, "http://prom.example:9090", interval_s=15, poll=False, clock=clock or Clock(0.0), **kwargs)


def _app(read, clock: Clock | None = None, **kwargs) -> GpuMemApp:
    return GpuMemApp.of_fleet(_fleet(read, clock, **kwargs))


async def _text(app, pilot) -> str:
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()
    return " ".join(" ".join(screen_text(app)).split())


def _table(app, name: str) -> list[list[str]]:
    table = app.screen.query_one(f"#{name}")
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
        assert nodes[-1][1] == "none" and "8 x NVIDIA H200" in nodes[-1][6] and " GB" in nodes[-1][2]
        codes = {row[1]: row for row in _table(app, "fleet-findings")}
        # headroom_low: node-c's critical GPU and one counted finding per node whose GPUs are low as planned
        assert codes["kv_saturated"][2] == "3" and codes["headroom_low"][2] == "4"
        # a sample no plan was made for (the catalog's plans: test_models_show_used_vs_planned_...): unknown
        # with its reason, never a number or "ok"
        assert "and 9 more): unknown, because no plan was made for it" in text  # node-h: its exporter's plan
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
        exporter_nodes={node: 1.0},
        node_findings=[  # the node's own words, from its exporter's gpumem_finding_info
            NodeFinding(node=node, code="foreign_process", severity="critical", gpu="0", title="held [bold]x[/]\x1b[2J")
        ],
    )

    async def read():
        return sample

    app = _app(read, Clock(101.0))
    async with app.run_test(size=(160, 40)) as pilot:
        text = await _text(app, pilot)
        assert "\x1b" not in text
        assert "held [bold]x[/]\\x1b[2J" in text
        assert "node\\x1b[31m-red" in text
        assert _table(app, "fleet-models")[0][0] == "evil\\nmodel[bold]x[/]"
        assert _table(app, "fleet-nodes")[0][0] == "node\\x1b[31m-red\\x1b]0;title\\x07"
        assert "1 x H100\\x1b[2J" in _table(app, "fleet-nodes")[0][6]


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
        assert "source ok" in await _text(app, pilot)
        answers[0] = PrometheusError("http://prom.example:9090: connection refused", "down")
        clock.now += 15
        app.screen.refresh_now()
        text = await _text(app, pilot)
        assert "stale: the last read failed" in text and "connection refused" in text
        assert "8 nodes, 24 GPUs" in text  # the last sample stays on screen
        clock.now += 60
        app.screen.refresh_now()
        text = await _text(app, pilot)
        assert "down: no answer for 75 s" in text
        assert app.is_running and len(_table(app, "fleet-nodes")) == 8


async def test_a_first_look_is_followed_at_once_and_kept_where_the_rest_fails(fleet_sample):
    """A first look (the reader's first sample, `reading` set): drawn, then read again at once, with no interval
    (the screen does not poll here); where that read fails, the first look stays on screen, still saying it is
    one, and the header says the read failed; `r` reads the whole picture."""
    look = fleet_sample.model_copy(update={"reading": ["which pods hold which GPUs"]})
    answers: list = [look, PrometheusError("http://prom.example:9090: connection refused", "down"), fleet_sample]

    async def read():
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    app = _app(read, Clock(fleet_sample.evaluated_at))
    async with app.run_test(size=(160, 60)) as pilot:
        text = await _text(app, pilot)
        assert len(answers) == 1  # the first look and the read right after it, in one go
        assert "8 nodes, 24 GPUs; reading which pods hold which GPUs ...; data age" in text
        assert "stale: the last read failed 0 s after the last good one" in text and "connection refused" in text
        assert "first look - " in text and "memory, engines and plans are judged when the rest is read" in text
        assert {row[-1] for row in _table(app, "fleet-nodes")} == {"reading"} and _table(app, "fleet-models") == []
        app.screen.refresh_now()
        text = await _text(app, pilot)
        assert "8 nodes, 24 GPUs, 11 engines, 11 joined" in text and "first look" not in text and "source ok" in text
        assert answers == [] and len(_table(app, "fleet-models")) == 3


async def test_a_read_out_past_the_next_one_s_time_is_stale_then_down(fleet_sample):
    """A source that stops answering without failing (a trickling or hung Prometheus): once the next read is
    due while one is out, the header says stale over the last sample, then down; never ok over frozen data."""
    release, started = threading.Event(), threading.Event()
    reads: list[int] = []

    async def read():
        reads.append(1)
        if len(reads) > 1:
            started.set()
            await asyncio.to_thread(release.wait, 60)
        return fleet_sample

    clock = Clock(fleet_sample.evaluated_at)
    app = _app(read, clock)
    async with app.run_test(size=(160, 60)) as pilot:
        assert "source ok" in await _text(app, pilot)
        clock.now += 15
        app.screen.refresh_now()  # the second read: it hangs
        await asyncio.to_thread(started.wait, 10)
        clock.now += 15
        app.screen.refresh_now()  # the next is due, the second still out
        await pilot.pause()
        text = " ".join(" ".join(screen_text(app)).split())
        assert "source stale: a read has been out for 15 s; showing the sample read 30 s ago" in text, text
        assert "source ok" not in text and "8 nodes, 24 GPUs" in text
        clock.now += 30
        app.screen.refresh_now()
        await pilot.pause()
        text = " ".join(" ".join(screen_text(app)).split())
        assert "source down: no answer for 60 s (a read has been out for 45 s)" in text, text
        assert len(reads) == 2  # a source that is out is never asked twice at once
        release.set()
        assert "source ok" in await _text(app, pilot)


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
        assert "source stale: part of the answer is missing: query engines: timeout" in text
        assert "source ok" not in text


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


@pytest.fixture(scope="module")
def fleet_history():
    from gpumem_tui.demo.fleet_history import demo_history
    from gpumem_tui.demo.fleet_series import series_rows
    from tests.sources.prometheus.conftest import END_S, STEP_S

    rows = list(series_rows(FLEET, END_S, STEP_S))
    end = max(at for *_, at in rows)
    return demo_history(rows, end - 120, end, 1)


async def test_the_history_line_shows_the_fleet_over_time_and_degrades_alone(fleet_sample, fleet_history):
    history = fleet_history
    reads: list[float] = []
    fail = False

    async def read():
        return fleet_sample

    async def read_history(at: float):
        reads.append(at)
        if fail:
            raise PrometheusError("http://prom.example:9090/api/v1/query_range: cannot connect", "down")
        return history

    clock = Clock(fleet_sample.evaluated_at)
    app = _app(read, clock, read_history=read_history)
    async with app.run_test(size=(160, 60)) as pilot:
        text = await _text(app, pilot)
        assert reads == [fleet_sample.evaluated_at]
        assert "Last 2 min, a point every 1 s (GPU memory: dcgm-exporter's GPUs):" in text
        assert "GPU memory used" in text and "KV cache, fullest" in text and "now 97 %, highest 100 %" in text
        clock.now += 15  # a refresh inside the minute does not read the history again
        app.screen.refresh_now()
        await _text(app, pilot)
        assert len(reads) == 1
        fail = True
        clock.now += 60
        app.screen.refresh_now()
        text = await _text(app, pilot)
        assert len(reads) == 2
        assert "History: unknown, because Prometheus cannot be reached" in text
        assert "Last 2 min" in text  # the last history read stays, the fleet's tables too
        assert "8 nodes, 24 GPUs" in text and "source ok" in text


async def test_the_history_line_says_it_is_reading_until_it_is_read(fleet_sample, fleet_history):
    """The history's range queries (the demo's simulated run) take seconds: until they answer, the line says
    so rather than standing empty."""
    import threading

    answered = threading.Event()

    async def read():
        return fleet_sample

    async def read_history(_at: float):
        await asyncio.to_thread(answered.wait, 10)
        return fleet_history

    app = _app(read, read_history=read_history)
    async with app.run_test(size=(160, 60)) as pilot:
        for _ in range(100):
            await pilot.pause(0.02)
            if "8 nodes, 24 GPUs" in " ".join(screen_text(app)):
                break
        text = " ".join(" ".join(screen_text(app)).split())
        assert "8 nodes, 24 GPUs" in text and "History: reading" in text and "Last 2 min" not in text
        answered.set()
        text = await _text(app, pilot)
        assert "Last 2 min" in text and "History: reading" not in text


async def test_models_show_used_vs_planned_as_fleet_check_says(fleet_sample):
    """One answer per question: the model table's used and planned memory are `fleet check --json`'s."""
    from gpumem_tui.catalog import load_catalog
    from gpumem_tui.cli.fleet_cmd import check_json
    from gpumem_tui.diagnosis.fleet.judge import judge_fleet
    from gpumem_tui.diagnosis.fleet.plans import plan_fleet
    from gpumem_tui.units import fmt

    planned = plan_fleet(fleet_sample, load_catalog())

    async def read():
        return planned

    app = _app(read, Clock(planned.evaluated_at))
    async with app.run_test(size=(160, 60)) as pilot:
        await _text(app, pilot)
        rows = {row[0]: row for row in _table(app, "fleet-models")}
    report = check_json(planned, judge_fleet(planned), 2)
    models = {m["model_name"]: m for m in report["models"]}
    assert set(models) == set(rows)
    for name, row in rows.items():
        assert row[4] == fmt(models[name]["used_bytes"], "GB")
        assert row[5] == fmt(models[name]["planned_bytes"], "GB")
        # node-h's engine is planned by its node's own gpumem-tui export, the others from the catalog
        assert models[name]["plan_from"] == sorted({e.plan_from for e in planned.engines if e.model_name == name})
    eight = models["meta-llama/Llama-3.1-8B-Instruct"]
    assert eight["planned_bytes"] == sum(
        e.planned_bytes or 0 for e in planned.engines if e.model_name == "meta-llama/Llama-3.1-8B-Instruct"
    )


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


async def test_a_fleet_with_no_node_and_no_engine_is_not_called_ok():
    """A selector that matches nothing: the header says nothing was read, as `fleet check` says UNKNOWN (a
    source that answers is not a fleet that is ok)."""
    why = "no dcgm-exporter series match the selector"
    empty = FleetSample(source="http://prom.example:9090", evaluated_at=100.0, unknown={"memory": why})

    async def read():
        return empty

    app = _app(read, Clock(101.0))
    async with app.run_test(size=(160, 40)) as pilot:
        text = await _text(app, pilot)
        assert f"source holds no node and no engine within the hour ({why})" in text
        assert f"UNKNOWN - no node and no engine within the hour ({why})" in text  # fleet check's words
        assert "source ok" not in text


async def test_the_history_is_read_once_the_fleet_is_on_screen(fleet_sample, fleet_history):
    """The history's range queries take the client's CPU (a point per step per node) and the server's: they
    start once a frame with the fleet's tables is written, never beside the first frame's layout and render
    (at 1,000 nodes they held it up by about 0.6 s)."""
    frames: list[int] = []
    drawn: list[int] = []
    read_after: list[int] = []

    class Drawing(FleetScreen):
        def _draw(self) -> None:
            super()._draw()
            if self.sample is not None and not drawn:
                drawn.append(len(frames))

    class Recording(GpuMemApp):
        def _display(self, screen, renderable) -> None:  # each frame Textual writes, headless too
            frames.append(len(frames))
            super()._display(screen, renderable)

        def first_screen(self) -> FleetScreen:
            return Drawing(self.fleet, self.glyphs)

    async def read():
        return fleet_sample

    async def read_history(_at: float):
        read_after.append(len(frames))
        return fleet_history

    app = Recording(fleet=_fleet(read, read_history=read_history))
    async with app.run_test(size=(160, 60)) as pilot:
        await _text(app, pilot)
        assert drawn and read_after and read_after[0] > drawn[0]


async def test_the_history_read_redraws_the_history_line_alone(fleet_sample, fleet_history):
    """The tables do not change when the history is read: filled again, 1,000 node rows held the screen for
    about 0.4 s right after the first frame."""
    filled: list[str] = []

    class Counting(FleetScreen):
        def _fill(self, name, table) -> None:
            filled.append(name)
            super()._fill(name, table)

    async def read():
        return fleet_sample

    async def read_history(_at: float):
        return fleet_history

    class Filled(GpuMemApp):
        def first_screen(self) -> FleetScreen:
            return Counting(self.fleet, self.glyphs)

    app = Filled(fleet=_fleet(read, read_history=read_history))
    async with app.run_test(size=(160, 60)) as pilot:
        text = await _text(app, pilot)
        assert "Last 2 min" in text and "8 nodes, 24 GPUs" in text
        assert filled == ["nodes", "findings", "models"]
