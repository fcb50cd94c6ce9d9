"""Records and recordings on the command line: a full disk, a file another recorder holds, `--endpoint`
with a recording (a demo scrapes it beside its own engines), and process names too long for the table. Each is one line
and exit 2, or a table whose numbers stay whole."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import json

import pytest
from rich.console import Console

from gpumem_tui.cli import main
from gpumem_tui.cli.snapshot_view import render
from gpumem_tui.models import Sample
from gpumem_tui.sources.replay import Recorder, RecordingReader
from tests.cli.refused import refused


def test_the_tui_refuses_endpoint_with_a_recording(tmp_path, capsys, monkeypatch):
    recording = tmp_path / "r.jsonl"
    assert main(["snapshot", "--demo", "idle-node", "--record", str(recording), "--json"]) == 0
    capsys.readouterr()
    code, out, err = refused(capsys, monkeypatch, "--replay", str(recording), "--endpoint", "http://127.0.0.1:8000")
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "--endpoint is for live engines; a recording brings its own" in err


def test_the_tui_scrapes_endpoint_beside_a_demo_as_its_feed_can():
    """The feed scrapes real endpoints beside a demo (bench/soak.py); the TUI refused what it could do."""
    from gpumem_tui.cli import build_parser
    from gpumem_tui.cli.tui_cmd import build_app

    app = build_app(build_parser().parse_args(["--demo", "healthy-8b", "--endpoint", "http://127.0.0.1:9"]))
    try:
        assert "http://127.0.0.1:9" in [point.url for point in app.node.feed.scraper.endpoints]
    finally:
        asyncio.run(app.node.feed.aclose())


@pytest.mark.parametrize("source", [["--demo", "healthy-8b"], ["--replay", "x.jsonl"]])
def test_check_refuses_it_with_a_demo_or_a_recording(capsys, source):
    assert main(["check", *source, "--endpoint", "http://127.0.0.1:8000"]) == 3
    assert "--endpoint is for live engines" in capsys.readouterr().err


def test_snapshot_record_on_a_full_disk_is_one_line_exit_2(capsys):
    assert main(["snapshot", "--demo", "idle-node", "--record", "/dev/full"]) == 2
    out, err = capsys.readouterr()
    assert err == "gpumem-tui: /dev/full: cannot write (No space left on device)\n"
    assert out == "", "nothing is shown when the sample could not be recorded"


def test_the_tui_refuses_to_record_on_a_full_disk(capsys, monkeypatch):
    code, _out, err = refused(capsys, monkeypatch, "--demo", "idle-node", "--record", "/dev/full")
    assert code == 2 and len(err.splitlines()) == 1
    assert "No space left on device" in err and "Traceback" not in err


def test_a_second_recorder_on_one_file_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    path = tmp_path / "shared.jsonl"
    with Recorder(path):  # another gpumem-tui records into this file
        assert main(["snapshot", "--demo", "idle-node", "--record", str(path)]) == 2
        assert capsys.readouterr().err == f"gpumem-tui: {path}: another gpumem-tui is recording to this file\n"
        code, _out, err = refused(capsys, monkeypatch, "--demo", "idle-node", "--record", str(path))
        assert code == 2 and "another gpumem-tui is recording" in err
    assert main(["snapshot", "--demo", "idle-node", "--record", str(path), "--json"]) == 0  # free again
    assert len(list(RecordingReader(path))) == 1


@pytest.fixture(scope="module")
def busy(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("busy") / "s.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        main(["snapshot", "--demo", "busy-node", "--record", str(path)])
    return json.loads(next(iter(RecordingReader(path))).model_dump_json())


@pytest.mark.parametrize("width", [80, 100, 160])
@pytest.mark.parametrize("field", ["name", "user", "cmdline"])
def test_long_names_never_push_the_numbers_out_of_the_process_table(busy, width, field):
    sample = copy.deepcopy(busy)
    long = ["x" * 500] if field == "cmdline" else "\x1b" + "N" * 500
    for process in sample["processes"][::2]:
        process[field] = long
    console = Console(width=width, file=io.StringIO(), markup=False, emoji=False, highlight=False, soft_wrap=False)
    render(Sample.model_validate(sample), console, "a replay")
    lines = console.file.getvalue().splitlines()
    table = lines[next(i for i, line in enumerate(lines) if line.lstrip().startswith("PID")) :][1:]
    for process in sample["processes"]:
        row = next(line for line in table if line.split()[:2] == [str(process["pid"]), str(process["gpu_index"])])
        memory = f"{process['gpu_memory_bytes'] / 2**20:,.0f} MiB"
        assert memory in row and "%" in row and len(row) <= width, row


@pytest.mark.parametrize("width", [80, 100, 160])
@pytest.mark.parametrize("name", ["NVIDIA H100 80GB HBM3", "\x1b" + "G" * 400])
def test_gpu_sizes_stay_whole_with_their_unit_in_the_gpu_table(busy, width, name):
    """The GPU table wrapped "73,790" apart from its "MiB" at 80 columns, and a long GPU name (from the
    driver or a recording) took the width the sizes needed."""
    sample = copy.deepcopy(busy)
    sample["gpus"][0]["name"] = name
    console = Console(width=width, file=io.StringIO(), markup=False, emoji=False, highlight=False, soft_wrap=False)
    render(Sample.model_validate(sample), console, "a replay")
    lines = console.file.getvalue().splitlines()
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("GPU ")) + 1 :]
    for gpu in sample["gpus"]:
        row = next(line for line in table if line.split()[:1] == [str(gpu["index"])])
        for size in (gpu["memory_used_bytes"], gpu["memory_total_bytes"]):
            assert f"{size / 2**20:,.0f} MiB" in row, row
        assert " W" in row and len(row) <= width, row
