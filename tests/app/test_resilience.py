"""Never frozen: a dead engine, a lost GPU, NVML failing mid-run, a refresh that raises, hostile text."""

from __future__ import annotations

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.driver_abi import ERROR_DRIVER_NOT_LOADED, ERROR_NOT_SUPPORTED, ERROR_TIMEOUT
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.sources.feed import Feed
from tests.app.conftest import record_demo, refresh, settle, text_of


def engine_title(app) -> str:
    return str(app.screen.query_one("EngineCard").render()).splitlines()[0]


def card_title(app, index: int) -> str:
    return str(app.screen.query_one(f"#gpu-{index}").render()).splitlines()[0]


async def test_a_dead_engine_goes_stale_then_down_while_gpus_keep_updating(make_app):
    app = make_app("healthy-8b", at=100)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        assert " ok" in engine_title(app)
        for server in app.demo_feed.servers.values():
            server.stop()
        app.demo_clock.set(110)
        await refresh(app, pilot)
        assert "stale" in engine_title(app) or "down" in engine_title(app)
        assert "2026-01-01 00:01:50" in str(app.screen.query_one("#header").render())


async def test_a_lost_gpu_is_one_card_not_the_app(make_app):
    app = make_app("gpu-lost", at=300)
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(app, pilot)
        assert "LOST" in card_title(app, 2)
        assert "LOST" not in card_title(app, 1)
        assert "GPU 2 lost" in text_of(app.screen.query_one("#findings"))


async def test_gpus_the_job_may_not_open_are_not_accessible_not_lost(make_app):
    app = make_app("slurm-denied", at=100)
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(app, pilot)
        for index in (2, 3):
            assert "not accessible from here" in card_title(app, index)
        assert "GPU 0 18:00.0 H100" in card_title(app, 0) and "LOST" not in card_title(app, 2)
        findings = text_of(app.screen.query_one("#findings"))
        assert "GPUs 2 and 3 are not accessible from here" in findings and "lost" not in findings


async def test_an_unreadable_field_is_one_field_not_the_card(make_app, tmp_path):
    scenario = tmp_path / "mig.toml"
    scenario.write_text('[[gpus]]\nmodel = "a100-sxm4-80gb"\nmig_instances_mib = [40192]\n\n[[gpus]]\nmodel = "h100"\n')
    app = make_app(str(scenario), at=5)
    app.demo_feed.driver.fail("nvmlDeviceGetGpuInstanceId", ERROR_NOT_SUPPORTED)
    app.demo_feed.driver.fail("nvmlDeviceGetPowerUsage", ERROR_TIMEOUT, gpu=1)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        assert "GPU 0 18:00.0 A100" in card_title(app, 0) and "GPU 1 26:00.0 H100" in card_title(app, 1)
        assert "/ 85.5 GB" in card_title(app, 1) and "W" not in card_title(app, 1)  # only the power is gone
        assert "refresh failed" not in text_of(app.screen.query_one("#findings"))
        assert "GPU 1 power: Timeout" in text_of(app.screen.query_one("#source-status"))


async def test_nvml_failing_mid_run_becomes_a_message(make_app):
    app = make_app("healthy-8b", at=100)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        driver = app.demo_feed.driver
        driver.fail("nvmlDeviceGetCount_v2", ERROR_DRIVER_NOT_LOADED)
        app.demo_clock.set(120)
        await refresh(app, pilot)
        assert "nvml:" in text_of(app.screen.query_one("#source-status"))
        driver.clear("nvmlDeviceGetCount_v2")
        app.demo_clock.set(130)
        await refresh(app, pilot)
        assert "GPU 0" in card_title(app, 0)


class Broken(Feed):
    """A feed whose refresh raises, as a bug in a source would."""

    name = "broken"

    async def sample(self):
        raise RuntimeError("disk on fire")


async def test_a_refresh_that_raises_is_shown_and_the_app_goes_on(catalog):
    app = GpuMemApp(Broken(), Judge(catalog), poll=False)
    async with app.run_test() as pilot:
        await settle(app, pilot)
        assert "refresh failed: RuntimeError: disk on fire" in text_of(app.screen.query_one("#findings"))
        await pilot.press("g")
        assert app.node.unit == "GiB"


async def test_outside_text_is_shown_literally(catalog, tmp_path):
    scenario = tmp_path / "hostile.toml"
    scenario.write_text(
        'description = "hostile names"\nhostname = "[red]host[/red]"\nduration_s = 60\n\n[[gpus]]\nmodel = "h100"\n\n'
        '[[processes]]\nid = "evil"\nname = "[bold]evil[/bold]"\n'
        'cmdline = ["python3", "-c", "[link=http://x]click[/link]", "\\u001b[31mred"]\n'
        'user = "[i]root[/i]"\ngpus = [0]\nmemory_gib = 1\nstart_s = 0\n'
    )
    clock = ManualClock(30)
    feed = DemoFeed(str(scenario), clock)
    app = GpuMemApp(feed, Judge(catalog), poll=False, clock=lambda: feed.node.timestamp)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(app, pilot)
        row = [cell.plain for cell in app.screen.query_one("#processes").get_row_at(0)]
        assert "[i]root[/i]" in row and "[link=http://x]click[/link]" in row[-1] and "\\x1b[31mred" in row[-1]
        assert "[red]host[/red]" in str(app.screen.query_one("#header").render())


class FullDisk:
    """A recorder whose disk filled up: every write fails as the OS says so."""

    path = "full.jsonl"

    def write(self, _sample):
        raise OSError(28, "No space left on device")

    def close(self):
        self.closed = True


async def test_a_recording_that_cannot_be_written_stops_recording_not_the_app(make_app):
    app = make_app("healthy-8b", at=100)
    async with app.run_test() as pilot:
        await settle(app, pilot)
        app.node.recorder = FullDisk()
        app.demo_clock.set(110)
        await refresh(app, pilot)
        assert app.node.recorder is None and app.node.sample.timestamp == app.demo_feed.node.timestamp
        app.demo_clock.set(120)
        await refresh(app, pilot)
        assert app.is_running


async def test_pause_holds_a_replay_in_place(tmp_path, catalog):
    from gpumem_tui.sources.feed import ReplayFeed
    from gpumem_tui.sources.pace import Pace
    from gpumem_tui.sources.replay import ReplaySource

    path = tmp_path / "rec.jsonl"
    feed = await record_demo(path, "healthy-8b", range(0, 60, 10))
    now = [0.0]
    pace = Pace(lambda: now[0])
    replay = ReplayFeed(ReplaySource(path, clock=pace), "rec.jsonl", pace)
    app = GpuMemApp(replay, Judge(catalog), poll=False)
    async with app.run_test() as pilot:
        now[0] = 20
        await refresh(app, pilot)
        await pilot.press("space")
        now[0] = 50
        assert "at 20 s" in replay.label
        await pilot.press("space")
        await refresh(app, pilot)
        assert "at 20 s" in replay.label and app.node.sample.timestamp - feed.node.timestamp == -30


async def test_f_shows_forensics_of_a_recording(catalog, tmp_path):
    """A recording of the noisy neighbour: the notebook is who grew before the first critical finding."""
    from gpumem_tui.app.screens.forensics import ForensicsScreen
    from gpumem_tui.sources.feed import ReplayFeed
    from gpumem_tui.sources.replay import ReplaySource

    path = tmp_path / "noisy.jsonl"
    await record_demo(path, "noisy-neighbour", range(30, 300, 5))
    app = GpuMemApp(ReplayFeed(ReplaySource(path, clock=lambda: 0.0), "noisy.jsonl"), Judge(catalog), poll=False)
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("f")
        assert isinstance(app.screen, ForensicsScreen)
        await app.screen.workers.wait_for_complete()
        await pilot.pause()
        text = text_of(app.screen.query_one("#forensics-text"))
        assert "First critical" in text and "3100" in text and "python3" in text
        assert "GPU 0" in text and "▼" in text


def test_the_apps_judge_leaves_textuals_watch_method_alone(make_app):
    """`App.watch(obj, attribute, callback)` is Textual's: the app's Investigation once took its name, so a
    widget binding to the app's reactives would have called an Investigation."""
    from textual.dom import DOMNode

    app = make_app("healthy-8b", at=100)
    assert getattr(app.watch, "__func__", None) is DOMNode.watch
    assert app.node.investigation.history is app.node.history
