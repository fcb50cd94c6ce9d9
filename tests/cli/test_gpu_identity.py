"""`snapshot` and `check` as text name each GPU as the TUI does, NVML index and bus id, and the driver;
a recording made before either was read prints without them."""

from __future__ import annotations

import json

from gpumem_tui.cli import main
from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.sources.replay import Recorder
from gpumem_tui.text import short_bus_id
from tests.cli.snapshot_text import snapshot_lines


def test_snapshot_names_the_driver_and_each_bus_id(capsys):
    assert main(["snapshot", "--demo", "tp4-70b", "--at", "105"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "driver 570.124.06" in lines[0]
    table = lines[lines.index("") + 1 :]
    assert table[0].split()[:3] == ["GPU", "Bus-Id", "Name"], table[0]
    for index, bus in enumerate(["18:00.0", "26:00.0", "34:00.0", "42:00.0"]):
        assert table[1 + index].split()[:2] == [str(index), bus], table[1 + index]


def test_check_names_the_driver_and_each_bus_id(capsys):
    assert main(["check", "--demo", "gpu-lost", "--at", "75"]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "check: simulated node 'gpu-lost' at 75 s, driver 570.124.06"
    # GPU 2 is lost: the driver no longer says where it sits
    assert lines[2] == "GPUs: 0 18:00.0, 1 26:00.0, 2 -, 3 42:00.0"


async def _old_recording(path):
    """A real recording, then the driver version and the bus ids taken out, as an older release wrote it."""
    feed = DemoFeed("healthy-8b", ManualClock(60))
    with Recorder(path) as recorder:
        recorder.write(await feed.sample())
    await feed.aclose()
    head, *samples = path.read_text(encoding="utf-8").splitlines()
    old = []
    for line in samples:
        sample = json.loads(line)
        sample.pop("driver_version")
        for gpu in sample["gpus"]:
            gpu.pop("bus_id")
        old.append(json.dumps(sample))
    path.write_text("\n".join([head, *old]) + "\n", encoding="utf-8")


async def test_an_old_recording_prints_without_bus_id_or_driver(tmp_path, capsys):
    path = tmp_path / "old.jsonl"
    await _old_recording(path)
    assert main(["snapshot", "--replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "driver" not in out.splitlines()[0]
    row = next(line for line in out.splitlines() if line.startswith("0 "))
    assert row.split()[:2] == ["0", "-"], row
    assert main(["check", "--replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "driver" not in out and "GPUs:" not in out


def test_a_bus_id_is_written_as_lspci_writes_it():
    assert short_bus_id("00000000:18:00.0") == short_bus_id("0000:18:00.0") == "18:00.0"
    assert short_bus_id("00000001:AB:00.1") == "0001:AB:00.1"
    assert short_bus_id("\x1b[2J|18") == "\\x1b[2J|18"  # not a bus id: shown as it came, literally
    assert short_bus_id(None) is None and short_bus_id("") is None


def test_an_80_column_terminal_keeps_every_number_whole_and_drops_the_bus_id_first():
    lines = snapshot_lines("busy-node", 110, 80)
    assert "Bus-Id" not in lines[2] and "Reserved" in lines[2], lines[2]
    assert "73,790 MiB  81,559 MiB" in lines[3] and "606 / 700 W" in lines[3], lines[3]
    wide = snapshot_lines("busy-node", 110, 120)
    assert wide[2].split()[:3] == ["GPU", "Bus-Id", "Name"] and "606 / 700 W" in wide[3]
