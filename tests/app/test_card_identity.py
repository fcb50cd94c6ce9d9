"""Which card is which: each GPU card names its PCI bus id beside NVML's index (not CUDA's), the header
names the driver; a recording made before either was read replays without them and without a complaint."""

from __future__ import annotations

import json

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.app.widgets.header_bar import HeaderBar
from gpumem_tui.demo import ManualClock, demo_collector
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.sources.feed import LiveFeed, ReplayFeed
from gpumem_tui.sources.replay import ReplaySource
from tests.app.conftest import record_demo, settle
from tests.app.screen_text import screen_text


def title(app, index: int = 0) -> str:
    return str(app.screen.query_one(f"#gpu-{index}", GpuCard).render()).splitlines()[0]


def header(app) -> str:
    return str(app.screen.query_one(HeaderBar).render())


async def test_the_card_title_names_the_bus_id_beside_the_nvml_index(make_app):
    app = make_app("healthy-8b")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        assert title(app).startswith("GPU 0 18:00.0 H100 80GB HBM3"), title(app)


async def test_one_line_cards_name_the_bus_id_when_there_is_room(make_app):
    """Eight folded cards on a wide screen: each line says which card, the bus ids the fake driver gives."""
    app = make_app("busy-node")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        lines = screen_text(app)
        for index, bus in enumerate(["18:00.0", "26:00.0", "34:00.0", "42:00.0"]):
            assert any(line.strip().startswith(f"GPU {index} {bus} ") for line in lines), (index, lines)


async def test_the_header_names_the_driver_version(make_app):
    app = make_app("healthy-8b")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        assert "driver 570.124.06" in header(app)


async def test_the_driver_gives_way_on_a_narrow_header_before_the_host(make_app):
    app = make_app("healthy-8b")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        shown = header(app)
        assert "driver" not in shown and "gpu-node" in shown, shown


async def _old_recording(tmp_path):
    """A real recording with the driver version and the bus ids taken out, as an older release wrote it."""
    path = tmp_path / "old.jsonl"
    await record_demo(path, "healthy-8b", range(30, 120, 30))
    lines = path.read_text(encoding="utf-8").splitlines()
    old = [lines[0]]
    for line in lines[1:]:
        sample = json.loads(line)
        sample.pop("driver_version", None)
        for gpu in sample["gpus"]:
            gpu.pop("bus_id", None)
        old.append(json.dumps(sample))
    path.write_text("\n".join(old) + "\n", encoding="utf-8")
    assert "bus_id" not in path.read_text() and "driver_version" not in path.read_text()
    return path


async def test_an_old_recording_replays_without_bus_id_or_driver(catalog, tmp_path):
    path = await _old_recording(tmp_path)
    app = GpuMemApp(ReplayFeed(ReplaySource(path, clock=lambda: 0.0), str(path)), Judge(catalog), poll=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        assert app.node.sample is not None and app.node.sample.errors == []
        assert "driver" not in header(app)
        assert title(app).startswith("GPU 0 H100 80GB HBM3"), title(app)
        assert app.is_running


async def test_a_bus_id_from_a_recording_is_shown_literally(catalog, tmp_path):
    path = await _old_recording(tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    for i in range(1, len(lines)):
        sample = json.loads(lines[i])
        sample["gpus"][0]["bus_id"] = "[bold]\x1b]0;pwned\x07"
        sample["driver_version"] = "570[red]\x1b[2J"
        lines[i] = json.dumps(sample)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    app = GpuMemApp(ReplayFeed(ReplaySource(path, clock=lambda: 0.0), str(path)), Judge(catalog), poll=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        assert title(app).startswith("GPU 0 [bold]\\x1b]0;pwned\\x07 "), title(app)
        assert "driver 570[red]\\x1b[2J" in header(app)


async def test_a_live_node_says_once_that_cuda_numbers_the_cards_otherwise(catalog, monkeypatch):
    """The real collector over the fake driver, as the live TUI reads a node: CUDA_VISIBLE_DEVICES in the
    app's environment brings one note, not one per sample."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    collector, _node = demo_collector("healthy-8b", clock=ManualClock(60))
    collector.source = "nvml"
    app = GpuMemApp(LiveFeed(collector, None, [], engine_wait_s=0, addresses=list), Judge(catalog), poll=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        app.node_screen.refresh_now()
        await settle(app, pilot)
        notes = [n.message for n in app._notifications if "CUDA" in n.message]
        assert len(notes) == 1 and "CUDA_VISIBLE_DEVICES=1" in notes[0], notes


async def test_a_recording_of_a_live_node_brings_no_note_about_this_shell(catalog, tmp_path, monkeypatch):
    """Its samples say `nvml`, but the cards were numbered in another shell, on another node perhaps."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    path = await _old_recording(tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    for i in range(1, len(lines)):
        sample = json.loads(lines[i])
        sample["source"] = "nvml"
        lines[i] = json.dumps(sample)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    app = GpuMemApp(ReplayFeed(ReplaySource(path, clock=lambda: 0.0), str(path)), Judge(catalog), poll=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        assert app.node.sample is not None and app.node.sample.source == "nvml"
        assert [n.message for n in app._notifications if "CUDA" in n.message] == []
