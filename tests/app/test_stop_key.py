"""`k` on a process row, driven through Pilot: it asks first (pid, user, command, GPU memory with its unit),
sends SIGTERM and offers SIGKILL to a process still there; on a demo the simulated process ends, its memory
goes and the findings follow; the outcome is said and recorded, and the recording plays it back. Another
user's process is refused; a recording or a node read from Prometheus offers no `k` and says why."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.app.screens.stop import StopScreen
from gpumem_tui.app.widgets.process_table import ProcessTable
from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.sources.feed import Feed, ReplayFeed
from gpumem_tui.sources.procfs import ProcFiles
from gpumem_tui.sources.replay import RecordingReader, ReplaySource
from gpumem_tui.sources.signals import Signaller
from tests.app.conftest import record_demo, settle, text_of
from tests.app.screen_text import screen_text
from tests.app.waiting import until
from tests.sources.proc_tree import write

NOTEBOOK = 3100
"""noisy-neighbour's notebook (user ana), 20 GiB beside the engine from 47 s."""


def _said(app) -> list[str]:
    return [n.message for n in app._notifications]


def _waiting(app) -> list[str]:
    """The notes that wait for a box (the stop sheet) to close."""
    return [note.message for note, _ in app.boxed_toasts.waiting]


def _footer(app) -> str:
    return " ".join(str(w.render()) for w in app.screen.query("FooterKey"))


async def _on_row(app, pilot, pid: int) -> ProcessTable:
    """The process table focused, its cursor on `pid`'s row."""
    table = app.screen.query_one(ProcessTable)
    table.focus()
    pids = [table.get_row_at(i)[0].plain for i in range(table.row_count)]
    table.move_cursor(row=pids.index(str(pid)))
    await pilot.pause()
    return table


def _pids(table: ProcessTable) -> list[int]:
    return [int(table.get_row_at(i)[0].plain) for i in range(table.row_count)]


async def _stopped(app, pilot) -> None:
    """Until the stop sheet's signal and wait are done and the node has been read again."""
    for _ in range(3):
        await app.workers.wait_for_complete()
        await settle(app, pilot)


async def test_k_asks_then_sigterm_ends_the_demo_process_and_the_findings_follow(make_app, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = make_app("noisy-neighbour", at=48)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot)
        assert any("pid 3100" in f.title for f in app.node.judged.findings)
        await pilot.press("r")  # recording: the outcome is a line in it
        table = await _on_row(app, pilot, NOTEBOOK)
        await until(pilot, lambda: "k stop" in _footer(app))  # the footer recomposes after focus moves
        assert "k stop" in _footer(app)
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, StopScreen)
        asked = " ".join(text_of(app.screen.query_one("#stop-text")).split())
        assert "Send SIGTERM to pid 3100?" in asked
        assert "user ana" in asked and "ipykernel_launcher" in asked and "21.47 GB on GPU 0" in asked
        await pilot.press("y")
        await _stopped(app, pilot)
        assert isinstance(app.screen, MainScreen)
        assert NOTEBOOK not in _pids(table) and _pids(table) == [2100]
        assert not app.demo_feed.node.running(NOTEBOOK) and 3100 not in app.demo_feed.node.gpus[0].held
        assert not any("pid 3100" in f.title for f in app.node.judged.findings)  # its finding is gone
        assert "pid 3100 (python3, user ana) ended after SIGTERM; it held 21.47 GB on GPU 0" in _said(app)
        await pilot.press("r")
    [path] = list(tmp_path.glob("gpumem-*.jsonl"))
    events = [json.loads(line) for line in path.read_text().splitlines() if '"event"' in line]
    assert [(e["pid"], e["signal"], e["outcome"]) for e in events] == [(NOTEBOOK, "SIGTERM", "ended")]


async def test_a_recording_with_a_signal_plays_it_back(make_app, catalog, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = make_app("noisy-neighbour", at=48)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("r")
        await _on_row(app, pilot, NOTEBOOK)
        await pilot.press("k", "y")
        await _stopped(app, pilot)
        for t in (50, 52):
            app.demo_clock.set(t)
            app.node_screen.refresh_now()
            await settle(app, pilot)
        await pilot.press("r")
    [path] = list(tmp_path.glob("gpumem-*.jsonl"))
    reader = RecordingReader(path)
    assert len(list(reader)) == 3 and reader.warnings == []  # the event line is no damaged sample
    assert [e.outcome for e in reader.events] == ["ended"]
    feed = ReplayFeed(ReplaySource(path, clock=lambda: 0.0, start_at=1e9), path.name)
    replay = GpuMemApp(feed, Judge(catalog), poll=False)
    async with replay.run_test(size=(100, 40)) as pilot:
        await settle(replay, pilot)
        [note] = [m for m in _said(replay) if m.startswith("recorded at 2026-01-01 00:00:48 UTC: ")]
        assert "pid 3100 (python3, user ana) ended after SIGTERM" in note


SCENARIO = """
description = "a process that traps SIGTERM"
hostname = "trap-node"
duration_s = 600
start_s = 10
story_s = 20

[[gpus]]
model = "h100"

[[processes]]
id = "trainer"
name = "torchrun"
cmdline = ["torchrun", "train.py"]
user = "bo"
gpus = [0]
memory_gib = 30
ignores_sigterm = true
"""


async def test_a_process_still_there_after_sigterm_is_offered_sigkill(catalog, tmp_path):
    scenario = tmp_path / "trap.toml"
    scenario.write_text(SCENARIO)
    feed = DemoFeed(str(scenario), ManualClock(20))
    app = GpuMemApp(feed, Judge(catalog), poll=False, clock=lambda: feed.node.timestamp)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot)
        app.screen.stop_wait_s = 1.0
        table = await _on_row(app, pilot, 3100)
        await pilot.press("k", "y", "escape")  # escape while it waits: the outcome comes first
        await _stopped(app, pilot)
        assert isinstance(app.screen, StopScreen)  # the same sheet, now asking about SIGKILL
        asked = " ".join(text_of(app.screen.query_one("#stop-text")).split())
        assert "pid 3100 is still running 1 s after SIGTERM. Send SIGKILL?" in asked
        # the sheet says it; its note waits under no toast until the sheet closes
        assert "pid 3100 (torchrun, user bo) is still running 1 s after SIGTERM" in _waiting(app)
        assert feed.node.running(3100)
        await pilot.press("y")
        await _stopped(app, pilot)
        assert isinstance(app.screen, MainScreen) and _pids(table) == []
        assert "pid 3100 (torchrun, user bo) is still running 1 s after SIGTERM" in _said(app)
        assert "pid 3100 (torchrun, user bo) ended after SIGKILL; it held 32.21 GB on GPU 0" in _said(app)
    await feed.aclose()


async def test_n_sends_nothing(make_app):
    app = make_app("noisy-neighbour", at=48)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot)
        table = await _on_row(app, pilot, NOTEBOOK)
        await pilot.press("k", "n")
        await _stopped(app, pilot)
        assert isinstance(app.screen, MainScreen) and NOTEBOOK in _pids(table)
        assert app.demo_feed.node.running(NOTEBOOK)


async def test_k_away_from_the_process_table_says_where_it_acts(make_app):
    app = make_app("noisy-neighbour", at=48)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot)
        await until(pilot, lambda: "q quit" in _footer(app))
        assert "q quit" in _footer(app) and "k stop" not in _footer(app)  # nothing focused: no row to act on
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert "k stops the process under the cursor of the process table: tab to it first" in _said(app)


class Theirs(Feed):
    """The simulated node's samples, its processes stopped as this node's are: by os.kill, their owner read
    from a /proc tree where pid 3100 runs as root, and we are uid 1000."""

    name = "demo noisy-neighbour"

    def __init__(self, proc: ProcFiles) -> None:
        self.demo = DemoFeed("noisy-neighbour", ManualClock(48))
        self.signaller = Signaller(proc, me=lambda: 1000)

    async def sample(self):
        return await self.demo.sample()

    def stopper(self) -> Signaller:
        return self.signaller


async def test_another_users_process_is_refused_with_the_reason(catalog, tmp_path):
    write(tmp_path, NOTEBOOK, "status", "Name:\tpython3\nUid:\t0\t0\t0\t0\n")
    feed = Theirs(ProcFiles(tmp_path))
    app = GpuMemApp(feed, Judge(catalog), poll=False, clock=lambda: feed.demo.node.timestamp)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot)
        await _on_row(app, pilot, NOTEBOOK)
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)  # nothing asked: refused at once
        [refused] = [m for m in _said(app) if "3100" in m]
        assert "pid 3100 belongs to root and you are" in refused and "only root may stop" in refused
    await feed.demo.aclose()


async def test_a_recording_offers_no_k_and_says_why(catalog, tmp_path):
    path = tmp_path / "r.jsonl"
    await record_demo(path, "noisy-neighbour", [48, 50])
    feed = ReplayFeed(ReplaySource(path, clock=lambda: 0.0, start_at=1e9), path.name)
    app = GpuMemApp(feed, Judge(catalog), poll=False)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot)
        await _on_row(app, pilot, NOTEBOOK)
        await until(pilot, lambda: "⏎ details" in _footer(app))
        assert "⏎ details" in _footer(app) and "k stop" not in _footer(app)
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert any(m.startswith("k stops a process, but not here: a recording") for m in _said(app))


@pytest.fixture(scope="module")
def fleet_sample():
    from gpumem_tui.demo.fleet_answers import demo_sample
    from tests.sources.prometheus.conftest import FLEET

    return demo_sample(FLEET, 120, 5, "demo: 8 simulated nodes")


async def test_a_node_read_from_prometheus_offers_no_k_and_says_why(catalog, fleet_sample):
    from gpumem_tui.demo.fleet_answers import demo_node_feed

    feed = demo_node_feed("node-d", lambda: fleet_sample)
    app = GpuMemApp(feed, Judge(catalog), poll=False)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot)
        app.screen.query_one(ProcessTable).focus()
        await until(pilot, lambda: "⏎ details" in _footer(app))
        assert "⏎ details" in _footer(app) and "k stop" not in _footer(app)
        await pilot.press("k")
        await pilot.pause()
        said = " ".join(_said(app))
        assert "k stops a process, but not here: a node read from Prometheus" in said


class Hostile(Feed):
    """A sample whose every text is hostile (names, users, command lines), its processes stoppable: what `k`
    and enter show of them is literal."""

    name = "hostile"

    def __init__(self, sample, proc: ProcFiles) -> None:
        self.one, self.signaller = sample, Signaller(proc, me=lambda: 0)

    async def sample(self):
        return self.one

    def stopper(self) -> Signaller:
        return self.signaller


async def test_what_k_and_enter_show_of_a_process_is_literal(catalog, tmp_path):
    from tests.fuzz.hostile import assert_no_raw_escape, hostile_sample, write_recording

    plain = tmp_path / "plain.jsonl"
    await record_demo(plain, "noisy-neighbour", [120])  # the engine gone: its kind, made hostile, fails a line
    hostile = write_recording(tmp_path / "hostile.jsonl", [hostile_sample(s) for s in RecordingReader(plain)])
    [sample] = list(RecordingReader(hostile))  # as a recording brings it back: validated
    app = GpuMemApp(Hostile(sample, ProcFiles(tmp_path)), Judge(catalog), poll=False, clock=lambda: sample.timestamp)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await _on_row(app, pilot, NOTEBOOK)
        for key, sheet in (("enter", "#details-text"), ("k", "#stop-text")):
            await pilot.press(key)
            await pilot.pause()
            shown = "\n".join(screen_text(app))
            assert_no_raw_escape(shown)
            assert "[bold]marked" in text_of(app.screen.query_one(sheet)), "markup is shown, not applied"
            await pilot.press("escape")
            await pilot.pause()


ENGINE = 2100
"""healthy-8b's vLLM engine core."""


async def test_an_engine_stopped_with_k_is_said_stopped_here_and_in_its_recording(make_app, catalog, tmp_path):
    """`k` on the engine, `y`: its exit is the signal's (pid, signal, when), not a crash to explain, in the
    finding and the timeline; the recording keeps the signal, so `check --replay` and a replay say so too."""
    from gpumem_tui.cli import main
    from gpumem_tui.diagnosis.forensics import investigate

    path = tmp_path / "stop.jsonl"
    app = make_app("healthy-8b", at=300, record_path=str(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)  # recording from the start (record_path)
        app.node_screen.refresh_now()  # the engine alive, in the recording
        await settle(app, pilot)
        app.demo_clock.set(302)  # the signal after the last sample the engine is alive in
        await _on_row(app, pilot, ENGINE)
        await pilot.press("k", "y")
        await _stopped(app, pilot)
        for t in (305, 310):
            app.demo_clock.set(t)
            app.node_screen.refresh_now()
            await settle(app, pilot)
        [exited] = [f for f in app.node.judged.findings if f.code == "engine_exited"]
        assert "stopped by you from this screen (SIGTERM at 00:05:02 UTC)" in exited.title, exited.title
        assert exited.severity == "warning" and "nothing before it points to a cause" not in exited.title
        assert "not a crash" in exited.explanation
        markers = [m.text for m in result_of(app).markers]
        assert any(f"(pid {ENGINE}) stopped by you from this screen (SIGTERM at" in m for m in markers), markers
        assert not any("engine does not answer" in m for m in markers), markers
    reader = RecordingReader(path)
    found = investigate(reader, catalog, events=reader.events)
    assert found is not None
    [exited] = found.exits
    assert "stopped from the screen that recorded this (SIGTERM at 00:05:02 UTC)" in exited.title
    assert main(["check", "--replay", str(path)]) == 1  # a warning: stopped, not a critical crash
    now = [0.0]
    feed = ReplayFeed(ReplaySource(path, clock=lambda: now[0]), path.name)
    replay = GpuMemApp(feed, Judge(catalog), poll=False)
    async with replay.run_test(size=(120, 40)) as pilot:
        for t in (0.0, 2.0, 5.0, 10.0):  # the replay's screen walks it sample by sample
            now[0] = t
            replay.node_screen.refresh_now()
            await settle(replay, pilot)
        [exited] = [f for f in replay.node.judged.findings if f.code == "engine_exited"]
        assert "stopped from the screen that recorded this (SIGTERM at 00:05:02 UTC)" in exited.title


def result_of(app):
    from gpumem_tui.diagnosis.forensics import result

    return result(app.node.investigation)
